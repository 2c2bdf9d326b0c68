"""The worker side of 'dist_sync', 'dist_async', 'dist_sync_device' and
'dist_device_sync' (README.md, "Distributed"): a subclass of ``KVStore``,
which checks and groups the arguments.

A worker sums a key's values across its devices (as the local store does),
then one asynchronous engine function per key sends the sum (or its 2bit
quantisation) to the key's server(s) and completes when they answered; a
pull is one engine function that receives straight into the destination
array.  Both return at once: they order against other work through the
arrays' engine variables, and an error (a peer that died or hangs, within
MXNET_KVSTORE_TIMEOUT) surfaces at the next wait on the arrays they write.

A server that failed (it raised while serving, or timed out waiting for a
worker) is unusable: it tells every worker, whose waiting calls then fail
and whose later calls raise KVStoreError at once, naming the server, the
key and the server's error.  A request the server only refused (a command
it could not carry out) fails alone and the store stays usable.
"""
import json
import threading

import numpy as np

from mx_engine import Context

from mx_kvstore import _dist_keys as keys
from mx_kvstore import _dist_shm as shm
from mx_kvstore._dist_shm_transfer import ShmTransfer
from mx_kvstore import _dist_rows as rows
from mx_kvstore import _dist_wire as wire
from mx_kvstore import _native, _server_role, optimizer_hooks
from mx_kvstore._comm import CommCPU, in_host_memory
from mx_kvstore._dist_engine import push_transfer
from mx_kvstore._dist_mpi import env_int
from mx_kvstore._dist_transport import PostOrder
from mx_kvstore.compression import GradientCompression
from mx_kvstore.errors import KVStoreError
from mx_kvstore.kvstore import KVStore

# 'dist' is MXNet's name for a sync store (its KVStoreServer creates one)
DIST_TYPES = ("dist_sync", "dist_async", "dist_sync_device", "dist_device_sync", "dist")
_CPU = Context("cpu", 0)


class _Key:
    """A key's shape, dtype, slices over the servers, and its buffer on this
    worker (the sum of the devices' values; pulls land here for several
    outputs).  The buffer's engine variable orders the key's transfers.
    With 2bit compression, ``residual`` and ``packed`` hold the error
    feedback and the quantised words of every slice, one after another.
    A row_sparse key has ``row_len`` (elements per row; None when dense)
    and slices of whole rows.  ``shared[i]`` is slice i's shared memory
    (a ``_dist_shm.Segment``; None: its data move as MPI messages)."""

    def __init__(self, shape, dtype, parts, row_len=None):
        from mx_ndarray import ndarray as nd
        self.shape, self.dtype, self.parts = tuple(shape), np.dtype(dtype), parts
        self.row_len = row_len
        self.buf = nd.zeros(self.shape, ctx=_CPU, dtype=self.dtype.name)
        self.residual = self.packed = None
        self.shared = [None] * len(parts)
        self.order = PostOrder()    # the key's requests leave in call order

    def compressed(self):
        if self.residual is None:
            size = int(np.prod(self.shape, dtype=np.int64))
            self.residual = np.zeros(size, np.float32)
            words = sum(GradientCompression.packed_size(hi - lo) for _, _, lo, hi in self.parts)
            self.packed = np.zeros(words, np.float32)
        return self.residual, self.packed


def _gather(count, done):
    """One callback per slice; ``done`` once all answered (first error wins).
    Called on the transport thread only."""
    state = [count, None]

    def one(error):
        if error is not None and state[1] is None:
            state[1] = error
        state[0] -= 1
        if state[0] == 0:
            done(state[1])
    return one


def _run_all(fns):
    """One function running ``fns`` in order (None for none): a transfer's
    shared-memory copies, run after its posts (PostOrder)."""
    if not fns:
        return None

    def run():
        for fn in fns:
            fn()
    return run


def _copy_rows(src, ctx, dst=None):
    """``src`` (row_sparse) into ``dst`` (or a new array) on ``ctx``, as one
    engine function ordered by both arrays: sparse ``copyto`` across
    contexts waits for ``src``, and a push or pull must not."""
    from mx_ndarray import sparse
    from mx_ndarray._sparse_base import push_sparse
    if dst is None:
        dst = sparse.zeros("row_sparse", src.shape, ctx=ctx, dtype=src.dtype)

    def fill(inputs, outputs):
        source, out = inputs[0], outputs[0]
        for name in ("data", "indices"):
            part = getattr(source, name)
            part = part.get() if out.xp is np and hasattr(part, "get") else out.xp.asarray(part)
            setattr(out, name, part)
    push_sparse("KVStoreDistCopyRows", fill, [src], [dst], ctx)
    return dst


class KVStoreDist(KVStore):
    """MXNet 1.9.1's distributed KVStore on MPI (worker side)."""

    def __init__(self, name="dist_sync"):
        if name not in DIST_TYPES:
            raise KVStoreError(f"kvstore type {name!r} is not a distributed type "
                               f"({', '.join(DIST_TYPES)})")
        super().__init__(name)
        # A sync server answers a pull only after the round of this worker's
        # push before it: the pull need not wait for the push's answer.
        self._pull_early = "async" not in name
        # dist_sync's dense data go through shared memory to a server on
        # this host (MXNET_KVSTORE_SHM=0: always MPI messages)
        self._use_shm = self._pull_early and shm.enabled()
        self._shm_bytes = shm.min_bytes()
        self._reduce_bytes = shm.reduce_bytes()
        self._client = _server_role.client()
        self._layout = self._client.layout
        self._bound = keys.bigarray_bound()
        self._keys = {}
        self._str_keys = {}
        # Where a key's values are summed before they are sent: on the first
        # value's device for dist_sync_device / dist_device_sync (MXNet's
        # CommDevice), in CPU memory otherwise (CommCPU).
        self._comm = CommCPU()
        self._sum_on_device = "device" in name
        delay = env_int("MXNET_KVSTORE_MAX_DELAY", unit=" steps")
        self._command_then_barrier({"sync_mode": "async" not in name, "max_delay": delay})

    # -- MXNet's properties ----------------------------------------------------
    @property
    def rank(self):
        return self._layout.workers.index(self._layout.rank)

    @property
    def num_workers(self):
        return self._layout.num_workers

    # -- keys and values -------------------------------------------------------
    def _groups(self, key, value, api, what="value"):
        """Every data call starts here: after a server failed, each raises."""
        failure = self._client.failure
        if failure is not None:
            raise KVStoreError(f"KVStore.{api}: the distributed store failed earlier: {failure}")
        return super()._groups(key, value, api, what)

    def _int_key(self, key):
        """str keys become ints in the order of their init (the same on
        every worker, as every worker inits the same keys)."""
        if isinstance(key, str):
            return self._str_keys.setdefault(key, len(self._str_keys))
        return int(key)

    def _state(self, key):
        return self._int_key(key), self._keys[self._int_key(key)]

    @staticmethod
    def _dense(key, values, api):
        for v in values:
            if v.stype != "default":
                raise KVStoreError(f"KVStore.{api}: key {key!r}: the distributed store takes "
                                   f"dense arrays here, got stype {v.stype!r} (row_sparse "
                                   f"values: init the key row_sparse, read it with "
                                   f"row_sparse_pull)")

    def _host_source(self, ik, state, values, priority=0):
        """The host array to send: the value itself when it is one dense
        array in host memory, else the devices' sum.  The sum is made on the
        first value's device for the *_device types (on a GPU, then copied
        once into the key's buffer), else in the key's buffer."""
        if len(values) == 1 and in_host_memory(values[0]):
            return values[0]
        ctx = values[0].context if self._sum_on_device else _CPU
        merged = state.buf if ctx == _CPU else self._comm.buffer(
            ik, "merged", 0, state.shape, state.dtype.name, ctx)
        self._comm.reduce(ik, values, merged, priority)
        if in_host_memory(merged):
            return merged
        merged.copyto(state.buf)
        return state.buf

    def _sparse_source(self, values):
        """The row_sparse sum of a key's values, in host memory: summed on
        the first value's device for the *_device types, else on the CPU."""
        from mx_ndarray import op
        ctx = values[0].context if self._sum_on_device else _CPU
        here = [v if v.context == ctx else _copy_rows(v, ctx) for v in values]
        merged = here[0] if len(here) == 1 else op.add_n(*here)
        return merged if in_host_memory(merged) else _copy_rows(merged, _CPU)

    # -- KVStore's hooks -------------------------------------------------------
    def _init_impl(self, keys_, values):
        """Worker 0's values initialise the servers; every worker waits."""
        for key, value in zip(keys_, values):
            sparse = value.stype == "row_sparse"
            if not sparse:
                self._dense(key, [value], "init")
            ik = self._int_key(key)
            size = int(np.prod(value.shape, dtype=np.int64))
            row_len = size // value.shape[0] if sparse and value.shape[0] else None
            if sparse and not row_len:
                raise KVStoreError(f"KVStore.init: row_sparse key {key!r} has shape "
                                   f"{value.shape}: the distributed store needs rows of at "
                                   f"least one element")
            try:
                parts = (keys.partition_rows(ik, value.shape[0], row_len,
                                             self._layout.num_servers, self._bound)
                         if sparse else
                         keys.partition(ik, size, self._layout.num_servers, self._bound))
            except ValueError as exc:
                raise KVStoreError(f"KVStore.init: {exc}") from None
            wire.dtype_code(value.dtype)
            state = self._keys[ik] = _Key(value.shape, value.dtype, parts, row_len)
            if self.rank == 0:
                # a row_sparse value goes dense (rows it lacks as zeros): the
                # servers keep every key dense
                if sparse:
                    value.copyto(state.buf)
                src = state.buf if sparse else self._host_source(ik, state, [value])
                self._transfer(wire.INIT, ik, state, src, False)
                state.buf.wait_to_read()
        self._barrier()
        if self._use_shm:
            for key in keys_:
                ik = self._int_key(key)
                if self._keys[ik].row_len is None:
                    self._attach(ik, self._keys[ik])
            self._barrier()     # every worker mapped the segments: servers close theirs

    def _push_impl(self, keys_, groups, priority):
        for key, values in zip(keys_, groups):
            ik, state = self._state(key)
            if state.row_len is not None:
                self._push_rows(key, ik, state, values, priority)
                continue
            self._dense(key, values, "push")
            self._transfer(wire.PUSH, ik, state, self._host_source(ik, state, values, priority),
                           self._compression is not None, priority)

    def _pull_impl(self, keys_, groups, priority):
        for key, outs in zip(keys_, groups):
            self._dense(key, outs, "pull")
            ik, state = self._state(key)
            self._receive(wire.PULL, ik, state, None, outs, priority)

    def _pushpull_impl(self, keys_, values, outs, priority):
        """Push, then the updated value into ``outs``, in one round trip
        (without compression; with it, a push then a pull, as MXNet)."""
        for key, vals, dsts in zip(keys_, values, outs):
            ik, state = self._state(key)
            if self._compression is not None or state.row_len is not None:
                # a push then a pull (row_sparse values: MXNet's dense pull
                # refuses row_sparse outs)
                super()._pushpull_impl([key], [vals], [dsts], priority)
                continue
            self._dense(key, vals + dsts, "pushpull")
            self._receive(wire.PUSHPULL, ik, state, self._host_source(ik, state, vals, priority),
                          dsts, priority)

    def _row_sparse_pull_impl(self, keys_, groups, row_ids, priority):
        """Each out gets the rows of its row ids (sorted, repeats dropped),
        asking each server only for the rows it holds."""
        for key, outs, rids in zip(keys_, groups, row_ids):
            ik, state = self._state(key)
            for out, rid in zip(outs, rids):
                self._pull_rows(ik, state, out, rid, priority)

    def _set_compression_impl(self, compression):
        """The servers learn the threshold (rank 0 tells them), then every
        push of float32 values is sent as 2bit words."""
        super()._set_compression_impl(compression)
        self._command_then_barrier({"compression": {"type": compression.type,
                                                    "threshold": compression.threshold}})

    def _barrier(self):
        """Blocks until every worker reached it (server 0 counts)."""
        self._blocking(0, wire.BARRIER, 0, None, "barrier")

    barrier = _barrier

    def _send_command_to_servers(self, head, body):
        self._command({"user": [int(head), str(body)]})

    # -- optimizer -------------------------------------------------------------
    def set_optimizer(self, optimizer):
        """Ships the optimizer to every server as JSON (its registered name and
        parameters; never pickle): the servers then update the weights."""
        self._command_then_barrier({"optimizer": optimizer_hooks.to_json(optimizer)})

    def save_optimizer_states(self, fname, dump_optimizer=False):
        raise KVStoreError("KVStore.save_optimizer_states: cannot save states for "
                           "distributed training (the states live on the servers)")

    def load_optimizer_states(self, fname):
        raise KVStoreError("KVStore.load_optimizer_states: cannot load states for "
                           "distributed training (the states live on the servers)")

    # -- transfers ---------------------------------------------------------------
    def _attach(self, ik, state):
        """Maps the shared memory of each of the key's slices whose server
        runs on this host (one round trip per slice, at init)."""
        for i, (server, skey, lo, hi) in enumerate(state.parts):
            if not self._layout.shares_host(self._layout.servers[server]) \
                    or not self._wants_shm(state, lo, hi):
                continue
            info = np.zeros(4, np.uint64)
            self._blocking(server, wire.SHM_ATTACH, skey, None, "init", recv=info)
            pid, fd, nbytes, nonce = (int(v) for v in info)
            if nbytes != (hi - lo) * state.dtype.itemsize:
                continue        # the server has none for this slice
            try:
                state.shared[i] = shm.Segment.attach(pid, fd, nbytes, self.num_workers, nonce)
            except OSError:     # its descriptor is not open to this process: messages
                state.shared[i] = None
            else:
                state.shared[i].mark_attached(self.rank)

    def _wants_shm(self, state, lo, hi):
        """Whether a dense slice [lo, hi) of a sync key moves through shared
        memory (when its server is on this host): from
        MXNET_KVSTORE_SHM_MIN_BYTES up (smaller ones take MPI messages)."""
        return (self._use_shm and state.row_len is None
                and (hi - lo) * state.dtype.itemsize >= self._shm_bytes)

    def _shared(self, seg, skey, src=None, into=None):
        """The transfer of a slice through its shared memory (src: a push,
        into: a pull, both: a pushpull) and the request's ARG flags; the
        workers sum a large slice when every worker mapped its segment.
        (None, 0) once a server failed: the request then fails at once,
        not after waiting for the slot."""
        if self._client.failure is not None:
            return None, 0
        reduce = (src is not None and src.nbytes >= self._reduce_bytes
                  and seg.all_attached())
        transfer = ShmTransfer(seg, self.rank, skey, src, into, reduce, self._client.timeout)
        return transfer, wire.ARG_SHM | (wire.ARG_REDUCE if transfer.reduce else 0)

    def _transfer(self, op, ik, state, src, compress, priority=0):
        """Sends ``src`` (a CPU array) slice by slice, 2bit-quantised with
        ``compress``; holds the key's buffer until every server answered.
        A push of a slice with shared memory copies into it instead; an
        INIT asks the servers for shared memory for a dense sync key."""
        client = self._client
        if compress:
            self._compression.check(ik, src)
            residual, packed = state.compressed()
            threshold = self._compression.threshold
        code = wire.dtype_code(state.dtype)

        def start(done):
            flat = src._host_view().reshape(-1)
            one = _gather(len(state.parts), done)
            at, copies = 0, []
            for i, (server, skey, lo, hi) in enumerate(state.parts):
                data, seg = flat[lo:hi], state.shared[i]
                if op == wire.PUSH and seg is not None and not compress:
                    transfer, flags = self._shared(seg, skey, src=data)
                    client.request(server, op, skey, one, dtype=code, label=ik, arg=flags,
                                   defer=copies.append, shared=transfer)
                    continue
                if compress:
                    data = packed[at:at + GradientCompression.packed_size(hi - lo)]
                    at += len(data)
                    _native.quantize_2bit_host(flat[lo:hi], residual[lo:hi], data, threshold)
                arg = (wire.ARG_COMPRESSED if compress else
                       wire.ARG_SHM if op == wire.INIT and self._wants_shm(state, lo, hi) else 0)
                client.request(server, op, skey, one, send=data, dtype=code, label=ik, arg=arg)
            return _run_all(copies)
        reads = [] if src is state.buf else [src]
        push_transfer(state.order.gate(state.order.ticket(), start), reads, [state.buf], _CPU,
                      f"KVStoreDist{wire.OP_NAMES[op].title()}", priority)

    def _receive(self, op, ik, state, src, outs, priority):
        """PULL (src None) or PUSHPULL: the servers' values land in ``outs[0]``
        when it is one CPU array, else in the buffer, copied to each output."""
        direct = len(outs) == 1 and outs[0].context.device_type == "cpu" and outs[0] is not src
        dst = outs[0] if direct else state.buf
        client, code = self._client, wire.dtype_code(state.dtype)

        def start(done):
            into = dst._host_view().reshape(-1)
            flat = None if src is None else src._host_view().reshape(-1)
            one = _gather(len(state.parts), done)
            copies = []
            for i, (server, skey, lo, hi) in enumerate(state.parts):
                seg = state.shared[i]
                if seg is not None:
                    transfer, flags = self._shared(
                        seg, skey, None if flat is None else flat[lo:hi], into[lo:hi])
                    client.request(server, op, skey, one, dtype=code, label=ik, arg=flags,
                                   shared=transfer, defer=copies.append)
                    continue
                client.request(server, op, skey, one, recv=into[lo:hi], dtype=code, label=ik,
                               send=None if flat is None else flat[lo:hi])
            return _run_all(copies)
        if src is None and direct:
            # After a push the pull is posted at once in sync mode (the key's
            # post order keeps it behind the push; the server holds it to the
            # round's end); in async mode it waits for the push's answer.
            reads, writes = ([] if self._pull_early else [state.buf]), [dst]
        elif src is None:
            reads, writes = [], [state.buf]
        else:
            reads = [] if src is state.buf else [src]
            writes = [state.buf] if dst is state.buf else [state.buf, dst]
        push_transfer(state.order.gate(state.order.ticket(), start), reads, writes, _CPU,
                      f"KVStoreDist{wire.OP_NAMES[op].title()}", priority)
        if not direct:
            self._comm.broadcast(state.buf, outs, priority)

    def _push_rows(self, key, ik, state, values, priority):
        """A row_sparse push: each server gets the rows of its slice present
        in the devices' sum (every server gets one, maybe of no rows: a sync
        round counts every worker)."""
        if any(v.stype != "row_sparse" for v in values):
            raise KVStoreError(f"KVStore.push: key {key!r} was initialized row_sparse; the "
                               f"distributed store takes row_sparse values for it, got "
                               f"{[v.stype for v in values]}")
        if self._compression is not None:
            raise KVStoreError(f"KVStore.push: key {key!r}: gradient compression does not "
                               f"support row_sparse values (as MXNet)")
        src = self._sparse_source(values)
        client, code, row_len = self._client, wire.dtype_code(state.dtype), state.row_len

        def start(done):
            blob = src._blob
            ids = np.asarray(blob.indices, dtype=np.int64)
            data = np.asarray(blob.data).reshape(len(ids), row_len)
            rows.check_ids(ids, state.shape[0])
            one = _gather(len(state.parts), done)
            for server, skey, first, a, b in rows.spans(ids, state.parts, row_len):
                client.request(server, wire.PUSH_ROWS, skey, one, dtype=code, label=ik,
                               arg=b - a, send=rows.pack(row_len, ids[a:b] - first, data[a:b]))
        push_transfer(start, [src], [state.buf], _CPU, "KVStoreDistPushRows", priority)

    def _pull_rows(self, ik, state, out, rid, priority):
        """The rows ``rid`` of the key into the row_sparse ``out``: they land
        in a row_sparse array in CPU memory (``out`` itself when it is one),
        copied on to a GPU's ``out``."""
        from mx_ndarray import sparse
        ids_nd = rid.as_in_context(_CPU).astype("int64", copy=False)
        target = out if in_host_memory(out) else sparse.zeros(
            "row_sparse", out.shape, ctx=_CPU, dtype=out.dtype)
        client, code, row_len = self._client, wire.dtype_code(state.dtype), state.row_len

        def start(done):
            ids = np.unique(ids_nd._host_view().reshape(-1))
            try:
                rows.check_ids(ids, state.shape[0])
            except ValueError as exc:
                raise KVStoreError(f"KVStore.row_sparse_pull: key {ik}: {exc}") from None
            values = np.empty((len(ids), row_len), state.dtype)
            wanted = [s for s in rows.spans(ids, state.parts, row_len) if s[4] > s[3]]

            def finish(error):
                if error is None:
                    blob = target._blob
                    blob.data = values.reshape((len(ids),) + state.shape[1:])
                    blob.indices = ids
                done(error)
            if not wanted:
                finish(None)
                return
            one = _gather(len(wanted), finish)
            for server, skey, first, a, b in wanted:
                client.request(server, wire.PULL_ROWS, skey, one, dtype=code, label=ik,
                               arg=b - a, send=rows.pack(row_len, ids[a:b] - first),
                               recv=values[a:b].reshape(-1))
        push_transfer(start, [ids_nd, state.buf], [target], _CPU, "KVStoreDistPullRows",
                      priority)
        if target is not out:
            _copy_rows(target, out.context, out)

    def _blocking(self, server, op, key, payload, what, recv=None):
        finished = threading.Event()
        result = []

        def done(error):
            result.append(error)
            finished.set()
        self._client.request(server, op, key, done, send=payload, recv=recv)
        finished.wait()
        if result[0] is not None:
            raise KVStoreError(f"kvstore.{what}: {result[0]}")

    def _command(self, command):
        payload = np.frombuffer(json.dumps(command).encode(), np.uint8)
        for server in range(self._layout.num_servers):
            self._blocking(server, wire.COMMAND, 0, payload, "command")

    def _command_then_barrier(self, command):
        """Worker 0 sends ``command`` to the servers, then every worker
        waits for the others.  A command a server refused raises on worker 0
        after the barrier, so the workers stay in step and the store usable
        (another command may follow); a failed server fails the barrier too."""
        refused = None
        if self.rank == 0:
            try:
                self._command(command)
            except KVStoreError as exc:
                if self._client.failure is not None:
                    raise
                refused = exc
        self._barrier()
        if refused is not None:
            raise refused
