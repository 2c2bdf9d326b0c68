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
"""
import json
import threading

import numpy as np

from mx_engine import Context
from mx_engine.base import MXNetError

from mx_kvstore import _dist_keys as keys
from mx_kvstore import _dist_wire as wire
from mx_kvstore import _native, _server_role, optimizer_hooks
from mx_kvstore._dist_engine import push_transfer
from mx_kvstore._dist_mpi import env_int
from mx_kvstore._dist_transport import PostOrder
from mx_kvstore.compression import GradientCompression
from mx_kvstore.errors import KVStoreError
from mx_kvstore.kvstore import KVStore

DIST_TYPES = ("dist_sync", "dist_async", "dist_sync_device", "dist_device_sync")
_CPU = Context("cpu", 0)


class _Key:
    """A key's shape, dtype, slices over the servers, and its buffer on this
    worker (the sum of the devices' values; pulls land here for several
    outputs).  The buffer's engine variable orders the key's transfers.
    With 2bit compression, ``residual`` and ``packed`` hold the error
    feedback and the quantised words of every slice, one after another."""

    def __init__(self, shape, dtype, parts):
        from mx_ndarray import ndarray as nd
        self.shape, self.dtype, self.parts = tuple(shape), np.dtype(dtype), parts
        self.buf = nd.zeros(self.shape, ctx=_CPU, dtype=self.dtype.name)
        self.residual = self.packed = None
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
        self._client = _server_role.client()
        self._layout = self._client.layout
        self._bound = keys.bigarray_bound()
        self._keys = {}
        self._str_keys = {}
        if self.rank == 0:
            delay = env_int("MXNET_KVSTORE_MAX_DELAY", unit=" steps")
            self._command({"sync_mode": "async" not in name, "max_delay": delay})
        self._barrier()

    # -- MXNet's properties ----------------------------------------------------
    @property
    def rank(self):
        return self._layout.workers.index(self._layout.rank)

    @property
    def num_workers(self):
        return self._layout.num_workers

    # -- keys and values -------------------------------------------------------
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
                raise KVStoreError(f"KVStore.{api}: key {key!r}: the distributed store moves "
                                   f"dense arrays only, got stype {v.stype!r}")

    def _host_source(self, state, values):
        """The CPU array to send: the value itself when it is one dense CPU
        array, else the devices' sum in the key's buffer."""
        if len(values) == 1 and values[0].context.device_type == "cpu":
            return values[0]
        from mx_ndarray import op
        on_cpu = [v if v.context.device_type == "cpu" else v.as_in_context(_CPU)
                  for v in values]
        op.add_n(*on_cpu, out=state.buf)
        return state.buf

    # -- KVStore's hooks -------------------------------------------------------
    def _init_impl(self, keys_, values):
        """Worker 0's values initialise the servers; every worker waits."""
        for key, value in zip(keys_, values):
            self._dense(key, [value], "init")
            ik = self._int_key(key)
            size = int(np.prod(value.shape, dtype=np.int64))
            try:
                parts = keys.partition(ik, size, self._layout.num_servers, self._bound)
            except ValueError as exc:
                raise KVStoreError(f"KVStore.init: {exc}") from None
            wire.dtype_code(value.dtype)
            state = self._keys[ik] = _Key(value.shape, value.dtype, parts)
            if self.rank == 0:
                self._transfer(wire.INIT, ik, state, self._host_source(state, [value]), False)
                state.buf.wait_to_read()
        self._barrier()

    def _push_impl(self, keys_, groups, priority):
        for key, values in zip(keys_, groups):
            self._dense(key, values, "push")
            ik, state = self._state(key)
            self._transfer(wire.PUSH, ik, state, self._host_source(state, values),
                           self._compression is not None, priority)

    def _pull_impl(self, keys_, groups, priority):
        for key, outs in zip(keys_, groups):
            ik, state = self._state(key)
            self._receive(wire.PULL, ik, state, None, outs, priority)

    def _pushpull_impl(self, keys_, values, outs, priority):
        """Push, then the updated value into ``outs``, in one round trip
        (without compression; with it, a push then a pull, as MXNet)."""
        if self._compression is not None:
            super()._pushpull_impl(keys_, values, outs, priority)
            return
        for key, vals, dsts in zip(keys_, values, outs):
            self._dense(key, vals + dsts, "pushpull")
            ik, state = self._state(key)
            self._receive(wire.PUSHPULL, ik, state, self._host_source(state, vals), dsts,
                          priority)

    def _row_sparse_pull_impl(self, keys_, groups, row_ids, priority):
        raise KVStoreError("KVStore.row_sparse_pull: the distributed store on MPI moves "
                           "dense arrays only")

    def _set_compression_impl(self, compression):
        """The servers learn the threshold (rank 0 tells them), then every
        push of float32 values is sent as 2bit words."""
        super()._set_compression_impl(compression)
        if self.rank == 0:
            self._command({"compression": {"type": compression.type,
                                           "threshold": compression.threshold}})
        self._barrier()

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
        text = optimizer_hooks.to_json(optimizer)
        if self.rank == 0:
            self._command({"optimizer": text})
        self._barrier()

    def save_optimizer_states(self, fname, dump_optimizer=False):
        raise KVStoreError("KVStore.save_optimizer_states: cannot save states for "
                           "distributed training (the states live on the servers)")

    def load_optimizer_states(self, fname):
        raise KVStoreError("KVStore.load_optimizer_states: cannot load states for "
                           "distributed training (the states live on the servers)")

    # -- transfers ---------------------------------------------------------------
    def _transfer(self, op, ik, state, src, compress, priority=0):
        """Sends ``src`` (a CPU array) slice by slice, 2bit-quantised with
        ``compress``; holds the key's buffer until every server answered."""
        client = self._client
        if compress:
            self._compression.check(ik, src)
            residual, packed = state.compressed()
            threshold = self._compression.threshold
        code = wire.dtype_code(state.dtype)

        def start(done):
            flat = src._host_view().reshape(-1)
            one = _gather(len(state.parts), done)
            at = 0
            for server, skey, lo, hi in state.parts:
                data = flat[lo:hi]
                if compress:
                    data = packed[at:at + GradientCompression.packed_size(hi - lo)]
                    at += len(data)
                    _native.quantize_2bit_host(flat[lo:hi], residual[lo:hi], data, threshold)
                client.request(server, op, skey, one, send=data, dtype=code, label=ik,
                               arg=int(compress))
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
            for server, skey, lo, hi in state.parts:
                client.request(server, op, skey, one, recv=into[lo:hi], dtype=code, label=ik,
                               send=None if flat is None else flat[lo:hi])
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
            for o in outs:
                state.buf.copyto(o)

    def _blocking(self, server, op, key, payload, what):
        finished = threading.Event()
        result = []

        def done(error):
            result.append(error)
            finished.set()
        self._client.request(server, op, key, done, send=payload)
        finished.wait()
        if result[0] is not None:
            raise MXNetError(f"kvstore.{what}: {result[0]}")

    def _command(self, command):
        payload = np.frombuffer(json.dumps(command).encode(), np.uint8)
        for server in range(self._layout.num_servers):
            self._blocking(server, wire.COMMAND, 0, payload, "command")
