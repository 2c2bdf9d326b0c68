"""Where a key's values are summed and how the result reaches the devices:
MXNet's kvstore ``Comm``.

- ``CommCPU`` ('local'): the sum is made in CPU memory, in the store's
  buffer; values on GPUs are first copied to CPU buffers.
- ``CommDevice`` ('device'): each key is summed on one of the devices its
  values live on (keys spread over the devices round robin, as MXNet
  spreads its merge buffers); values elsewhere are copied there first, 2bit
  compressed when compression is set (quantised where they are, the packed
  words copied, dequantised and summed on the merge device).

Dense sums and copies in CPU memory are one native engine function each
(mx_kvstore._native, no GIL); the rest goes through mx.nd's operators.
Every step is pushed on the engine and ordered by the arrays' variables.
"""
import mx_ndarray as nd
from mx_engine import Context

from mx_kvstore import _native


def in_host_memory(arr):
    """Whether ``arr`` lives in CPU memory (cpu, cpu_pinned, cpu_shared)."""
    return arr.context.device_type != "gpu"


def _natively_summed(arrays):
    return all(a.stype == "default" and in_host_memory(a) for a in arrays) and \
        arrays[0].dtype.name in _native.SUM_DTYPES


class CommCPU:
    """'local': sums and updates in CPU memory."""

    def __init__(self):
        self._buffers = {}       # (key, role, index) -> NDArray, kept between pushes
        self.compression = None

    def home(self, value):
        """Where the store keeps a key initialised with ``value``: CPU memory
        (pinned for a value on a GPU, so copies to and from it are fast)."""
        return Context("cpu_pinned", 0) if value.context.device_type == "gpu" else Context("cpu", 0)

    def merge_context(self, key, values, stored):
        return stored.context if in_host_memory(stored) else self.home(stored)

    def buffer(self, key, role, index, shape, dtype, ctx):
        """A dense array of ``shape`` and ``dtype`` on ``ctx``, the same one
        for the same (key, role, index) while it fits."""
        buf = self._buffers.get((key, role, index))
        if buf is None or buf.shape != shape or buf.dtype != dtype or buf.context != ctx:
            buf = nd.empty(shape, ctx=ctx, dtype=dtype)
            self._buffers[(key, role, index)] = buf
        return buf

    def _gathered(self, key, values, ctx):
        """``values``, each copied to ``ctx`` (a kept buffer) unless already there."""
        out = []
        for i, v in enumerate(values):
            if v.context != ctx:
                buf = self.buffer(key, "copy", i, v.shape, v.dtype, ctx)
                v.copyto(buf)
                v = buf
            out.append(v)
        return out

    def reduce(self, key, values, out, priority=0):
        """Pushes ``out = sum(values)`` (dense ``out``).  Arrays in CPU memory
        are read where they are, whatever their CPU context."""
        if in_host_memory(out) and _natively_summed(values):
            _native.push_sum(values, out, priority)
            return
        values = self._gathered(key, values, out.context)
        if in_host_memory(out) and _natively_summed(values):
            _native.push_sum(values, out, priority)
        elif len(values) == 1:
            values[0].copyto(out)
        else:
            nd.add_n(*values, out=out)

    def reduce_sparse(self, key, values, ctx):
        """The sum of row_sparse ``values`` on ``ctx``: a new array."""
        values = [v.as_in_context(ctx) for v in values]
        return values[0].copy() if len(values) == 1 else nd.add_n(*values)

    def broadcast(self, src, outs, priority=0):
        """Pushes copies of ``src`` into every array of ``outs``."""
        native = [o for o in outs if o.stype == "default" and in_host_memory(o)
                  and o.dtype == src.dtype] if src.stype == "default" and in_host_memory(src) \
            else []
        if native:
            _native.push_copy(src, native, priority)
        for o in outs:
            if not any(o is n for n in native):
                src.copyto(o)


class CommDevice(CommCPU):
    """'device': each key summed on one of its values' devices."""

    def __init__(self):
        super().__init__()
        self._merge_ctx = {}
        self._next = 0

    def home(self, value):
        return value.context

    def merge_context(self, key, values, stored):
        ctx = self._merge_ctx.get(key)
        devices = sorted({v.context for v in values}, key=lambda c: (c.device_typeid, c.device_id))
        if ctx is None or ctx not in devices:
            ctx = devices[self._next % len(devices)]
            self._next += 1
            self._merge_ctx[key] = ctx
        return ctx

    def reduce(self, key, values, out, priority=0):
        if self.compression is None:
            return super().reduce(key, values, out, priority)
        comp = self.compression
        size = comp.packed_size(out.size)
        packed = []
        for i, v in enumerate(values):
            comp.check(key, v)
            residual = self._buffers.get((key, "residual", i))
            if residual is None or residual.context != v.context:
                residual = nd.zeros(v.shape, ctx=v.context, dtype="float32")
                self._buffers[(key, "residual", i)] = residual
            word = self.buffer(key, "packed", i, (size,), out.dtype, v.context)
            comp.quantize(v, residual, word, priority)
            if word.context != out.context and not (in_host_memory(word) and in_host_memory(out)):
                there = self.buffer(key, "packed_there", i, (size,), out.dtype, out.context)
                word.copyto(there)
                word = there
            packed.append(word)
        comp.dequantize_sum(packed, out, priority)
