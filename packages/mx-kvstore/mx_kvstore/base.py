"""MXNet 1.9.1's abstract KVStore interface, the registry of store types and
``create``, and the normalisation of (key, value) arguments that every store
shares.

Two registries, as MXNet has both: ``KVStoreBase.register`` takes a class
and names it by its lower-cased class name (MXNet's extension point,
``mx.kv.create('mykvstore')``); ``register_type(name, factory)`` names a
store type the way ``create`` spells it ('local', 'dist_sync', ...), which
is how the local stores and the distributed ones (mx_kvstore.dist) plug in.
"""
import operator
import warnings

from mx_ndarray import NDArray

from mx_kvstore.errors import KVStoreError


class KVStoreBase:
    """An abstract key-value store interface for data parallel training
    (MXNet's ``mx.kv.KVStoreBase``)."""

    OPTIMIZER = "optimizer"
    kv_registry = {}

    def broadcast(self, key, value, out, priority=0):
        """Broadcasts ``value`` of rank 0 to every rank, into ``out``."""
        raise NotImplementedError()

    def pushpull(self, key, value, out=None, priority=0):
        """Pushes ``value`` and pulls the result into ``out`` (or ``value``)."""
        raise NotImplementedError()

    def set_optimizer(self, optimizer):
        """Registers an optimizer with the store."""
        raise NotImplementedError()

    def is_capable(self, capability):
        """Whether the store supports ``capability`` ('optimizer')."""
        raise NotImplementedError()

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Saves the updater's states to the file ``fname``."""
        raise NotImplementedError()

    def load_optimizer_states(self, fname):
        """Loads the updater's states from the file ``fname``."""
        raise NotImplementedError()

    @property
    def type(self):
        """The store's type, as passed to ``create``."""
        raise NotImplementedError()

    @property
    def rank(self):
        """This worker's rank, in ``[0, num_workers)``."""
        raise NotImplementedError()

    @property
    def num_workers(self):
        """The number of workers."""
        raise NotImplementedError()

    @staticmethod
    def register(klass):
        """Registers a KVStore class under its lower-cased name, so that
        ``create(name)`` makes one (MXNet's decorator)."""
        if not isinstance(klass, type):
            raise TypeError(f"KVStoreBase.register: expected a class, got {type(klass).__name__}")
        name = klass.__name__.lower()
        if name in KVStoreBase.kv_registry:
            old = KVStoreBase.kv_registry[name]
            warnings.warn(f"WARNING: New kvstore {klass.__module__}.{klass.__name__} is "
                          f"overriding existing kvstore {old.__module__}.{old.__name__}")
        KVStoreBase.kv_registry[name] = klass
        return klass


# Store types by the name ``create`` takes: name -> factory(name).
_TYPES = {}


def register_type(name, factory):
    """Makes ``create(name)`` return ``factory(name)``.  The distributed
    stores register their names ('dist_sync', 'dist_async', ...) here."""
    if not isinstance(name, str) or not callable(factory):
        raise TypeError("register_type: expected a str name and a callable factory")
    _TYPES[name.lower()] = factory


def create(name="local"):
    """Creates a KVStore: 'local', 'device', 'nccl', a registered
    distributed type ('dist_sync', 'dist_async', 'dist_sync_device',
    'dist_device_sync' once mx_kvstore.dist is importable) or a class
    registered with ``KVStoreBase.register``."""
    if not isinstance(name, str):
        raise TypeError("name must be a string")
    name = name.lower()
    if name in KVStoreBase.kv_registry:
        return KVStoreBase.kv_registry[name]()
    why = _load_dist() if name not in _TYPES and name.startswith("dist") else ""
    factory = _TYPES.get(name)
    if factory is None:
        raise KVStoreError(f"mx.kv.create: unknown KVStore type {name!r}{why}; known types: "
                           f"{', '.join(sorted(set(_TYPES) | set(KVStoreBase.kv_registry)))}")
    return factory(name)


def _load_dist():
    """Imports the distributed stores, which register their types; returns
    why they are missing ('' when they loaded)."""
    try:
        import mx_kvstore.dist  # noqa: F401
    except ImportError as exc:
        if exc.name not in ("mx_kvstore.dist", "mpi4py"):
            raise
        return f" (the distributed stores do not import: {exc})"
    return ""


# --- keys and values --------------------------------------------------------------------

def _check_key(key, api):
    """``key`` as an int or a str; anything else is refused."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        raise TypeError(f"KVStore.{api}: a key must be an int or a str, got bool {key!r}")
    try:
        return operator.index(key)
    except TypeError:
        raise TypeError(f"KVStore.{api}: a key must be an int or a str, got "
                        f"{type(key).__name__} {key!r}") from None


def _check_values(key, value, api, what):
    """The NDArrays given for one key: one array, or a list (one per device)."""
    if isinstance(value, NDArray):
        return [value]
    if isinstance(value, (list, tuple)) and value:
        for v in value:
            if not isinstance(v, NDArray):
                raise TypeError(f"KVStore.{api}: each {what} for key {key!r} must be an "
                                f"NDArray, got {type(v).__name__}")
        return list(value)
    raise TypeError(f"KVStore.{api}: the {what} for key {key!r} must be an NDArray or a "
                    f"non-empty list of NDArrays, got {type(value).__name__}")


def group_key_values(key, value, api, what="value"):
    """Normalises a (key, value) argument as MXNet's ``_ctype_key_value`` and
    ``GroupKVPairs`` do: returns (keys, groups), the distinct keys in first
    appearance and, per key, the list of its arrays (one per device).

    ``key`` is an int, a str, or a list of them; ``value`` an NDArray or a
    list of NDArrays per key (a list of lists for a list of keys).  Keys of
    one call are all ints or all strs."""
    if isinstance(key, (list, tuple)):
        if not isinstance(value, (list, tuple)) or len(key) != len(value):
            got = len(value) if isinstance(value, (list, tuple)) else type(value).__name__
            raise KVStoreError(f"KVStore.{api}: {len(key)} keys need a list of {len(key)} "
                               f"{what}s, got {got}")
        pairs = [(_check_key(k, api), v) for k, v in zip(key, value)]
    else:
        pairs = [(_check_key(key, api), value)]
    if not pairs:
        return [], []
    is_str = isinstance(pairs[0][0], str)
    groups = {}
    for k, v in pairs:
        if isinstance(k, str) != is_str:
            raise KVStoreError(f"KVStore.{api}: inconsistent types of keys detected: "
                               f"{pairs[0][0]!r} and {k!r} (use all int or all str keys)")
        groups.setdefault(k, []).extend(_check_values(k, v, api, what))
    return list(groups), list(groups.values())
