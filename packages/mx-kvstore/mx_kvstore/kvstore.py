"""``KVStore``: MXNet 1.9.1's KVStore API, the part every store type shares."""
from mx_kvstore import optimizer_hooks
from mx_kvstore.base import KVStoreBase, group_key_values
from mx_kvstore.compression import GradientCompression
from mx_kvstore.errors import KVStoreError, UnknownKeyError


class KVStore(KVStoreBase):
    """A key-value store for the synchronisation of values over devices
    (and, in the distributed subclasses, machines): MXNet 1.9.1's API.

    This class checks and normalises every argument -- keys are ints or strs
    (never both in one store), a value is an NDArray or a list of NDArrays
    per key (one per device), values must match the shape and dtype the key
    was initialised with -- keeps the updater and its states and the
    gradient compression parameters, and calls the ``_*_impl`` methods with
    ``keys`` (distinct, in first appearance) and ``groups`` (per key, the
    list of its arrays).  Push and pull return at once: implementations
    push engine work ordered by the arrays' variables and never wait.

    A store type subclasses it, calls ``super().__init__(type_name)`` and
    overrides:

    - ``_init_impl(keys, values)``: store each key's initial value (one
      NDArray per key; keys are new);
    - ``_push_impl(keys, groups, priority)``: aggregate each group and
      store it, or hand (key, merged, stored) to ``self._updater`` when set;
    - ``_pull_impl(keys, groups, priority)``: copy each stored value into
      every array of its group;
    - ``_row_sparse_pull_impl(keys, groups, row_ids, priority)``: the rows
      ``row_ids[i][j]`` of key i into ``groups[i][j]``;
    - optionally ``_pushpull_impl`` (default: push, then pull),
      ``_broadcast_impl`` (default: init, then pull), ``_set_compression_impl``,
      ``set_optimizer`` (a distributed store ships the optimizer to its
      servers with ``optimizer_hooks.to_json``), ``rank``, ``num_workers``,
      ``_barrier`` and ``_send_command_to_servers``.

    ``self._meta[key]`` is (shape, dtype, stype) of every initialised key.
    """

    def __init__(self, kv_type):
        self._type = kv_type
        self._meta = {}
        self._key_type = None        # str or int, fixed by the first key
        self._updater = None
        self._compression = None

    # --- what a subclass overrides ------------------------------------------------------
    def _init_impl(self, keys, values):
        raise NotImplementedError()

    def _push_impl(self, keys, groups, priority):
        raise NotImplementedError()

    def _pull_impl(self, keys, groups, priority):
        raise NotImplementedError()

    def _row_sparse_pull_impl(self, keys, groups, row_ids, priority):
        raise NotImplementedError()

    def _pushpull_impl(self, keys, values, outs, priority):
        self._push_impl(keys, values, priority)
        self._pull_impl(keys, outs, priority)

    def _broadcast_impl(self, keys, values, outs, priority):
        self._init_impl(keys, [group[0] for group in values])
        self._pull_impl(keys, outs, priority)

    def _set_compression_impl(self, compression):
        self._compression = compression

    # --- argument checks ----------------------------------------------------------------
    def _groups(self, key, value, api, what="value"):
        keys, groups = group_key_values(key, value, api, what)
        if keys:
            key_type = str if isinstance(keys[0], str) else int
            if self._key_type is not None and key_type is not self._key_type:
                raise KVStoreError(f"KVStore.{api}: key {keys[0]!r} is a {key_type.__name__}, "
                                   f"but this store's keys are {self._key_type.__name__}s "
                                   f"(int and str keys cannot be mixed)")
        return keys, groups

    def _check_known(self, keys, groups, api, what):
        """Every key initialised, every array of the key's shape and dtype."""
        for key, group in zip(keys, groups):
            meta = self._meta.get(key)
            if meta is None:
                raise UnknownKeyError(api, key)
            shape, dtype, _ = meta
            for i, arr in enumerate(group):
                if arr.shape != shape or arr.dtype != dtype:
                    raise KVStoreError(
                        f"KVStore.{api}: {what} {i} of key {key!r} has shape {arr.shape} and "
                        f"dtype {arr.dtype.name}; the key was initialized with shape "
                        f"{shape} and dtype {dtype.name}")

    # --- the API ------------------------------------------------------------------------
    def _claim_new_keys(self, keys, groups, api):
        """Records the keys of an init or broadcast: each new, with one value."""
        for k, group in zip(keys, groups):
            if k in self._meta or len(group) > 1:
                raise KVStoreError(f"KVStore.{api}: duplicate init of key {k!r}: a key is "
                                   f"initialized once, with one value")
        if keys and self._key_type is None:
            self._key_type = str if isinstance(keys[0], str) else int
        for k, group in zip(keys, groups):
            self._meta[k] = (group[0].shape, group[0].dtype, group[0].stype)

    def init(self, key, value):
        """Initialises each key with its value (copied into the store)."""
        keys, groups = self._groups(key, value, "init")
        self._claim_new_keys(keys, groups, "init")
        self._init_impl(keys, [group[0] for group in groups])

    def push(self, key, value, priority=0):
        """Pushes values (a list per key sums across devices) into the store;
        returns at once."""
        keys, groups = self._groups(key, value, "push")
        self._check_known(keys, groups, "push", "value")
        self._push_impl(keys, groups, priority)

    def pull(self, key, out=None, priority=0, ignore_sparse=True):
        """Copies the stored values into ``out`` (a list per key: one per
        device); returns at once.  With ``ignore_sparse``, sparse arrays in
        ``out`` are skipped (pull them with row_sparse_pull)."""
        if out is None:
            raise KVStoreError("KVStore.pull: argument 'out' is required")
        keys, groups = self._groups(key, out, "pull", "out")
        self._check_known(keys, groups, "pull", "out")
        if ignore_sparse:
            kept = [(k, [o for o in g if o.stype == "default"]) for k, g in zip(keys, groups)]
            keys = [k for k, g in kept if g]
            groups = [g for _, g in kept if g]
        self._pull_impl(keys, groups, priority)

    def pushpull(self, key, value, out=None, priority=0):
        """Pushes ``value``, then pulls the result into ``out`` (into
        ``value`` when ``out`` is None)."""
        keys, values = self._groups(key, value, "pushpull")
        self._check_known(keys, values, "pushpull", "value")
        if out is None:
            outs = values
        else:
            out_keys, outs = self._groups(key, out, "pushpull", "out")
            self._check_known(out_keys, outs, "pushpull", "out")
        self._pushpull_impl(keys, values, outs, priority)

    def broadcast(self, key, value, out, priority=0):
        """Initialises each key with ``value`` and pulls it into ``out``."""
        keys, values = self._groups(key, value, "broadcast")
        out_keys, outs = self._groups(key, out, "broadcast", "out")
        self._claim_new_keys(keys, values, "broadcast")
        self._check_known(out_keys, outs, "broadcast", "out")
        self._broadcast_impl(keys, values, outs, priority)

    def row_sparse_pull(self, key, out=None, priority=0, row_ids=None):
        """Pulls the rows ``row_ids`` (1-D NDArrays, any order, repeats
        allowed) of row_sparse values into row_sparse ``out``.  One row_ids
        array for a list of outs serves them all."""
        if out is None or row_ids is None:
            raise KVStoreError("KVStore.row_sparse_pull: arguments 'out' and 'row_ids' are "
                               "required")
        keys, groups = self._groups(key, out, "row_sparse_pull", "out")
        self._check_known(keys, groups, "row_sparse_pull", "out")
        if not isinstance(row_ids, (list, tuple)):
            row_ids = [row_ids]
        if len(keys) == 1 and len(row_ids) == 1:
            rid_groups = [[row_ids[0]] * len(groups[0])]
        else:
            _, rid_groups = group_key_values(key, list(row_ids) if isinstance(key, (list, tuple))
                                             else row_ids, "row_sparse_pull", "row_ids")
        for k, g, r in zip(keys, groups, rid_groups):
            if self._meta[k][2] != "row_sparse":
                raise KVStoreError(f"KVStore.row_sparse_pull: key {k!r} holds a "
                                   f"{self._meta[k][2]} value; row_sparse_pull needs a "
                                   f"row_sparse one (use pull)")
            if len(r) != len(g):
                raise KVStoreError(f"KVStore.row_sparse_pull: key {k!r} has {len(g)} outs "
                                   f"but {len(r)} row_ids arrays")
            for o in g:
                if o.stype != "row_sparse":
                    raise KVStoreError(f"KVStore.row_sparse_pull: out of key {k!r} must be "
                                       f"row_sparse, got {o.stype}")
        self._row_sparse_pull_impl(keys, groups, rid_groups, priority)

    def set_gradient_compression(self, compression_params):
        """Sets gradient compression: ``{'type': '2bit', 'threshold': 0.5}``
        (threshold > 0, default 0.5); 'device' and distributed stores only."""
        if "device" not in self.type and "dist" not in self.type:
            raise KVStoreError("Gradient compression is not supported for this type of "
                               f"kvstore ({self.type!r}; use 'device' or a dist type)")
        self._set_compression_impl(GradientCompression(compression_params))

    def set_optimizer(self, optimizer):
        """Updates the stored values with ``optimizer`` at each push."""
        self._set_updater(optimizer_hooks.get_updater(optimizer))

    def _set_updater(self, updater):
        """Sets ``updater(key, merged, stored)``, called at each push with the
        aggregated value; its operations are pushed on the engine like any."""
        if updater is not None and not callable(updater):
            raise TypeError(f"KVStore._set_updater: updater must be callable, got "
                            f"{type(updater).__name__}")
        self._updater = updater

    set_updater = _set_updater

    def is_capable(self, capability):
        """Whether the store supports ``capability``: 'optimizer' is."""
        if capability.lower() == KVStoreBase.OPTIMIZER:
            return True
        raise ValueError(f"Unknown capability: {capability}")

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Writes the updater's states (and the optimizer with
        ``dump_optimizer``) to the file ``fname``."""
        if self._updater is None:
            raise KVStoreError("KVStore.save_optimizer_states: this store has no updater "
                               "(call set_optimizer first)")
        with open(fname, "wb") as f:
            f.write(optimizer_hooks.get_states(self._updater, dump_optimizer))

    def load_optimizer_states(self, fname):
        """Loads states that save_optimizer_states wrote into the updater."""
        if self._updater is None:
            raise KVStoreError("KVStore.load_optimizer_states: this store has no updater "
                               "(call set_optimizer first)")
        with open(fname, "rb") as f:
            optimizer_hooks.set_states(self._updater, f.read())

    @property
    def type(self):
        """The store's type, as passed to ``create``."""
        return self._type

    @property
    def rank(self):
        """This worker's rank: 0 on a single machine."""
        return 0

    @property
    def num_workers(self):
        """The number of workers: 1 on a single machine."""
        return 1

    def _barrier(self):
        """Waits for every worker; a single machine has nothing to wait for."""

    barrier = _barrier

    def _send_command_to_servers(self, head, body):
        """Sends a command to the servers; a single machine has none."""
