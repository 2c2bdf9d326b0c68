"""The worker side of 'dist_sync', 'dist_async', 'dist_sync_device' and
'dist_device_sync' (packages/mx-kvstore/README.md, "Distributed").

A worker sums a key's values across its devices (as the local store does),
then one asynchronous engine function per key sends the sum to the key's
server(s) and completes when they answered; a pull is one engine function
that receives straight into the destination array.  Both return at once:
they order against other work through the arrays' engine variables, and an
error (a peer that died or hangs, within MXNET_KVSTORE_TIMEOUT) surfaces at
the next wait on the arrays they write.
"""
import json
import os
import threading

import numpy as np

from mx_engine import Context
from mx_engine.base import MXNetError

from mx_kvstore import _dist_keys as keys
from mx_kvstore import _dist_wire as wire
from mx_kvstore import _server_role
from mx_kvstore._dist_engine import push_transfer

DIST_TYPES = ("dist_sync", "dist_async", "dist_sync_device", "dist_device_sync")
_CPU = Context("cpu", 0)


class _Key:
    """A key's shape, dtype, slices over the servers, and its buffer on this
    worker (the sum of the devices' values; pulls land here for several
    outputs).  The buffer's engine variable orders the key's transfers."""

    def __init__(self, shape, dtype, parts):
        from mx_ndarray import ndarray as nd
        self.shape, self.dtype, self.parts = tuple(shape), np.dtype(dtype), parts
        self.buf = nd.zeros(self.shape, ctx=_CPU, dtype=self.dtype.name)


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


def _max_delay():
    text = os.environ.get("MXNET_KVSTORE_MAX_DELAY")
    if text is None or text == "":
        return None
    try:
        value = int(text)
    except ValueError:
        raise MXNetError(f"MXNET_KVSTORE_MAX_DELAY={text!r}: expected a number of steps "
                         "(an integer >= 0)") from None
    if value < 0:
        raise MXNetError(f"MXNET_KVSTORE_MAX_DELAY={value}: must be >= 0")
    return value


class KVStoreDist:
    """MXNet 1.9.1's distributed KVStore on MPI (worker side)."""

    def __init__(self, name="dist_sync"):
        if name not in DIST_TYPES:
            raise MXNetError(f"kvstore type {name!r} is not a distributed type "
                             f"({', '.join(DIST_TYPES)})")
        self._type = name
        self._client = _server_role.client()
        self._layout = self._client.layout
        self._bound = keys.bigarray_bound()
        self._keys = {}
        self._str_keys = {}
        self._updater = None
        self._optimizer = None
        if self.rank == 0:
            self._command({"sync_mode": "async" not in name, "max_delay": _max_delay()})
        self.barrier()

    # -- MXNet's properties ----------------------------------------------------
    @property
    def type(self):
        return self._type

    @property
    def rank(self):
        return self._layout.workers.index(self._layout.rank)

    @property
    def num_workers(self):
        return self._layout.num_workers

    # -- keys and values -------------------------------------------------------
    def _int_key(self, key, api, create=False):
        if isinstance(key, str):
            if key not in self._str_keys:
                if not create:
                    raise MXNetError(f"kvstore.{api}: key {key!r} was not initialised")
                self._str_keys[key] = len(self._str_keys)
            return self._str_keys[key]
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            return int(key)
        raise TypeError(f"kvstore.{api}: a key must be an int or a str, got "
                        f"{type(key).__name__}")

    @staticmethod
    def _pairs(key, value, api):
        """[(key, [values])] for one key or a list of keys."""
        if isinstance(key, (list, tuple)):
            if not isinstance(value, (list, tuple)) or len(value) != len(key):
                raise MXNetError(f"kvstore.{api}: {len(key)} keys need a list of "
                                 f"{len(key)} values")
            return [(k, list(v) if isinstance(v, (list, tuple)) else [v])
                    for k, v in zip(key, value)]
        return [(key, list(value) if isinstance(value, (list, tuple)) else [value])]

    def _state(self, key, api):
        k = self._int_key(key, api)
        state = self._keys.get(k)
        if state is None:
            raise MXNetError(f"kvstore.{api}: key {key!r} was not initialised (call init first)")
        return k, state

    def _check_values(self, key, state, values, api):
        for v in values:
            if tuple(v.shape) != state.shape:
                raise MXNetError(f"kvstore.{api}: key {key!r} holds shape {state.shape}, "
                                 f"got an array of shape {tuple(v.shape)}")
            if getattr(v, "stype", "default") != "default":
                raise MXNetError(f"kvstore.{api}: key {key!r}: the distributed store moves "
                                 f"dense arrays only, got stype {v.stype!r}")

    def _host_source(self, state, values):
        """The CPU array to send: the value itself when it is one dense CPU
        array of the key's dtype, else the devices' sum in the key's buffer."""
        if len(values) == 1 and values[0].context.device_type == "cpu" \
                and np.dtype(values[0].dtype) == state.dtype:
            return values[0]
        from mx_ndarray import op
        on_cpu = [v if v.context.device_type == "cpu" else v.as_in_context(_CPU)
                  for v in values]
        if len(on_cpu) == 1:
            on_cpu[0].copyto(state.buf)
        else:
            op.add_n(*on_cpu, out=state.buf)
        return state.buf

    # -- the API ---------------------------------------------------------------
    def init(self, key, value):
        """Worker 0's values initialise the servers; every worker waits."""
        for k, values in self._pairs(key, value, "init"):
            ik = self._int_key(k, "init", create=True)
            v = values[0]
            size = int(np.prod(v.shape, dtype=np.int64))
            state = _Key(v.shape, v.dtype,
                         keys.partition(ik, size, self._layout.num_servers, self._bound))
            self._keys[ik] = state
            if self.rank == 0:
                self._transfer(wire.INIT, ik, state, src=self._host_source(state, [v]))
                state.buf.wait_to_read()
        self.barrier()

    def push(self, key, value, priority=0):
        for k, values in self._pairs(key, value, "push"):
            ik, state = self._state(k, "push")
            self._check_values(k, state, values, "push")
            self._transfer(wire.PUSH, ik, state, src=self._host_source(state, values),
                           priority=priority)

    def pull(self, key, out=None, priority=0, ignore_sparse=True):
        if out is None:
            raise MXNetError("kvstore.pull: argument 'out' is required")
        for k, outs in self._pairs(key, out, "pull"):
            ik, state = self._state(k, "pull")
            self._check_values(k, state, outs, "pull")
            self._receive(wire.PULL, ik, state, None, outs, priority)

    def pushpull(self, key, value, out=None, priority=0):
        """Push, then the updated value into ``out`` (``value`` when None),
        answered in one round trip."""
        pairs = self._pairs(key, value, "pushpull")
        outs = self._pairs(key, value if out is None else out, "pushpull")
        for (k, values), (_, dsts) in zip(pairs, outs):
            ik, state = self._state(k, "pushpull")
            self._check_values(k, state, values + dsts, "pushpull")
            self._receive(wire.PUSHPULL, ik, state, self._host_source(state, values), dsts,
                          priority)

    def broadcast(self, key, value, out, priority=0):
        self.init(key, value)
        self.pull(key, out=out, priority=priority)

    def barrier(self):
        """Blocks until every worker reached it (server 0 counts)."""
        self._blocking(0, wire.BARRIER, 0, None, "barrier")

    def _barrier(self):
        self.barrier()

    # -- optimizer ---------------------------------------------------------------
    def set_optimizer(self, optimizer):
        """Ships the optimizer to every server as JSON (its registered name and
        parameters; never pickle): the servers then update the weights."""
        to_json = getattr(optimizer, "to_json", None)
        if to_json is None:
            raise MXNetError(f"kvstore.set_optimizer: {type(optimizer).__name__} has no "
                             "to_json(): the servers receive optimizers as JSON only")
        self._optimizer = optimizer
        if self.rank == 0:
            self._command({"optimizer": to_json()})
        self.barrier()

    def _set_updater(self, updater):
        # As MXNet's dist store: kept, but dense updates happen on the servers.
        self._updater = updater

    set_updater = _set_updater

    def save_optimizer_states(self, fname, dump_optimizer=False):
        raise MXNetError("kvstore.save_optimizer_states: cannot save states for "
                         "distributed training (the states live on the servers)")

    def load_optimizer_states(self, fname):
        raise MXNetError("kvstore.load_optimizer_states: cannot load states for "
                         "distributed training (the states live on the servers)")

    # -- transfers ---------------------------------------------------------------
    def _transfer(self, op, ik, state, src, priority=0):
        """Sends ``src`` (a CPU array) slice by slice; holds the key's buffer
        until every server answered."""
        client, code = self._client, wire.dtype_code(state.dtype)

        def start(done):
            flat = src._host_view().reshape(-1)
            one = _gather(len(state.parts), done)
            for server, skey, lo, hi in state.parts:
                client.request(server, op, skey, one, send=flat[lo:hi], dtype=code, label=ik)
        reads = [] if src is state.buf else [src]
        push_transfer(start, reads, [state.buf], _CPU, f"KVStoreDist{wire.OP_NAMES[op].title()}",
                      priority)

    def _receive(self, op, ik, state, src, outs, priority):
        """PULL (src None) or PUSHPULL: the servers' values land in ``outs[0]``
        when it is one CPU array of the key's dtype, else in the buffer,
        copied to each output."""
        direct = len(outs) == 1 and outs[0].context.device_type == "cpu" \
            and np.dtype(outs[0].dtype) == state.dtype and outs[0] is not src
        dst = outs[0] if direct else state.buf
        client, code = self._client, wire.dtype_code(state.dtype)

        def start(done):
            into = dst._host_view().reshape(-1)
            flat = None if src is None else src._host_view().reshape(-1)
            one = _gather(len(state.parts), done)
            for server, skey, lo, hi in state.parts:
                client.request(server, op, skey, one, recv=into[lo:hi], dtype=code, label=ik,
                               send=None if flat is None else flat[lo:hi])
        if src is None:
            reads, writes = ([state.buf], [dst]) if direct else ([], [state.buf])
        else:
            reads = [] if src is state.buf else [src]
            writes = [state.buf] if dst is state.buf else [state.buf, dst]
        push_transfer(start, reads, writes, _CPU, f"KVStoreDist{wire.OP_NAMES[op].title()}",
                      priority)
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


def create(name):
    """A distributed store of type ``name`` (one of DIST_TYPES)."""
    return KVStoreDist(name)
