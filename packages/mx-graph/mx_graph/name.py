"""Automatic node names: MXNet's NameManager and Prefix.

An operator called without ``name=`` is named after its operator in lower
case plus a per-manager counter (``fullyconnected0``, ``fullyconnected1``);
``with mx.name.Prefix('net_'):`` prefixes every name made inside, given or
not, as MXNet 1.x does.
"""
import threading

__all__ = ["NameManager", "Prefix", "current"]

_local = threading.local()


class NameManager:
    """Names nodes; the innermost manager in a ``with`` block is current."""

    def __init__(self):
        self._counter = {}
        self._old = None

    def get(self, name, hint):
        """``name`` when given, else ``hint`` plus this manager's count of it."""
        if name:
            return name
        n = self._counter.get(hint, 0)
        self._counter[hint] = n + 1
        return f"{hint}{n}"

    def __enter__(self):
        self._old = current()
        _local.manager = self
        return self

    def __exit__(self, *exc):
        _local.manager = self._old


class Prefix(NameManager):
    """Prefixes every name made in its scope with ``prefix``."""

    def __init__(self, prefix):
        super().__init__()
        self._prefix = prefix

    def get(self, name, hint):
        return self._prefix + super().get(name, hint)


def current():
    """The NameManager in effect on this thread."""
    manager = getattr(_local, "manager", None)
    if manager is None:
        manager = _local.manager = NameManager()
    return manager
