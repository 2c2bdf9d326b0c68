"""Symbol attributes: AttrScope and the hidden-key spelling.

MXNet stores the attributes that the system reads (ctx_group, lr_mult,
wd_mult, force_mirroring, mirror_stage) under ``__key__`` so that they can
never clash with an operator's parameters; ``attr('lr_mult')`` reads
``__lr_mult__``.  Every other attribute is stored as given.
"""
import threading

__all__ = ["AttrScope", "HIDDEN_KEYS", "stored_key", "current"]

HIDDEN_KEYS = ("ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage")

_local = threading.local()


def stored_key(key):
    """The key an attribute is stored under (MXSymbolSetAttr's rule)."""
    return f"__{key}__" if key in HIDDEN_KEYS else key


class AttrScope:
    """Attributes given to every symbol made in the ``with`` block; an inner
    scope adds to (and overrides) the outer one."""

    def __init__(self, **kwargs):
        for key, value in kwargs.items():
            if not isinstance(value, str):
                raise ValueError(f"AttrScope: attribute '{key}' must be a string, got "
                                 f"{type(value).__name__}")
        self._attr = kwargs
        self._old = None

    def get(self, attr):
        """This scope's attributes updated with ``attr`` (the call's own)."""
        if not self._attr:
            return dict(attr or {})
        merged = dict(self._attr)
        merged.update(attr or {})
        return merged

    def __enter__(self):
        self._old = current()
        outer = dict(self._old._attr)
        outer.update(self._attr)
        self._attr = outer
        _local.scope = self
        return self

    def __exit__(self, *exc):
        _local.scope = self._old


def current():
    """The AttrScope in effect on this thread."""
    scope = getattr(_local, "scope", None)
    if scope is None:
        scope = _local.scope = AttrScope()
    return scope
