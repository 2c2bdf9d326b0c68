"""The seam to the optimizers, which live above this package in ``mx``.

mx_kvstore never imports ``mx``.  The meta-package fills these hooks when
``mx.kvstore`` is imported (``register(...)``), the way a lower package
keeps a registry that an upper one fills (ARCHITECTURE.md):

- ``get_updater(optimizer)``: an updater ``f(key, merged, stored)``
  (``mx.optimizer.get_updater``);
- ``to_json(optimizer)`` / ``from_json(text)``: the optimizer as its
  registered name and parameters, so a server builds it without unpickling
  bytes from the network (``opt.to_json()``, ``mx.optimizer.from_json``);
- ``get_states(updater, dump_optimizer)`` / ``set_states(updater, data)``:
  the updater's states as bytes (``updater.get_states`` /
  ``updater.set_states``), the default when not given.
"""
from mx_engine.base import MXNetError

_hooks = {}
_NAMES = ("get_updater", "to_json", "from_json", "get_states", "set_states")


def register(**hooks):
    """Sets the named hooks (any of get_updater, to_json, from_json,
    get_states, set_states); the last registration of a name wins."""
    for name, fn in hooks.items():
        if name not in _NAMES:
            raise TypeError(f"optimizer_hooks.register: unknown hook {name!r}; "
                            f"the hooks are {', '.join(_NAMES)}")
        if not callable(fn):
            raise TypeError(f"optimizer_hooks.register: hook {name!r} must be callable, "
                            f"got {type(fn).__name__}")
        _hooks[name] = fn


def _hook(name):
    fn = _hooks.get(name)
    if fn is None:
        raise MXNetError(f"mx_kvstore: no optimizer support is registered (hook {name!r}); "
                         f"`import mx` registers mx.optimizer's")
    return fn


def get_updater(optimizer):
    """The updater that applies ``optimizer`` to a (key, merged, stored)."""
    return _hook("get_updater")(optimizer)


def to_json(optimizer):
    """``optimizer`` as JSON text: its registered name and parameters."""
    return _hook("to_json")(optimizer)


def from_json(text):
    """The optimizer that ``to_json`` described."""
    return _hook("from_json")(text)


def get_states(updater, dump_optimizer=False):
    """The updater's states (and the optimizer with ``dump_optimizer``) as bytes."""
    fn = _hooks.get("get_states")
    return fn(updater, dump_optimizer) if fn else updater.get_states(dump_optimizer)


def set_states(updater, data):
    """Loads states that ``get_states`` wrote into ``updater``."""
    fn = _hooks.get("set_states")
    return fn(updater, data) if fn else updater.set_states(data)
