"""NCCL through CuPy's bindings (``cupy.cuda.nccl``) for the 'nccl' store:
what is missing when it cannot run, one clique of communicators per set of
GPUs, and the groups of calls pushed on the engine.

Nothing here imports CuPy at import time: ``require_nccl`` does, at
``create('nccl')``, and turns whatever is missing into a KVStoreError.
"""
import warnings

import numpy as np

from mx_kvstore._nccl_engine import device_pointer, push_collective
from mx_kvstore.errors import KVStoreError

# The dtypes MXNet's CommNCCL hands to NCCL, by NumPy name -> the name of
# cupy.cuda.nccl's constant.
_NCCL_DTYPES = {"float16": "NCCL_FLOAT16", "float32": "NCCL_FLOAT32",
                "float64": "NCCL_FLOAT64", "uint8": "NCCL_UINT8", "int32": "NCCL_INT32",
                "int64": "NCCL_INT64"}
SUPPORTED_DTYPES = tuple(_NCCL_DTYPES)


def require_nccl(api):
    """cupy.cuda.nccl, once CuPy imports, the NCCL library loads and CUDA
    sees a GPU; otherwise a KVStoreError that names each of them missing."""
    hint = "pip install 'mx-kvstore[nccl]' (cupy-cuda12x and nvidia-nccl-cu12)"
    try:
        import cupy
    except Exception as exc:      # ImportError, or a CUDA library that fails to load
        raise KVStoreError(f"{api}: KVStore type 'nccl' needs CuPy, which does not import "
                           f"({type(exc).__name__}: {exc}); {hint}") from None
    missing = []
    with warnings.catch_warnings(record=True) as caught:
        # CuPy warns (once) when libnccl does not load; its reason goes
        # into our error instead.
        warnings.simplefilter("always")
        try:
            from cupy.cuda import nccl
        except Exception as exc:
            nccl = None
            missing.append(f"CuPy's NCCL bindings do not import ({type(exc).__name__}: {exc})")
    if nccl is not None and not getattr(nccl, "available", True):
        reasons = [" ".join(str(w.message).split()) for w in caught]
        missing.append("the NCCL library does not load" +
                       (f" ({reasons[0]})" if reasons else ""))
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:      # no driver, or no device visible
        count = None
        missing.append(f"a CUDA GPU: CUDA reports {type(exc).__name__}: {exc}")
    if count == 0:
        missing.append("a CUDA GPU: CUDA sees none")
    if missing:
        raise KVStoreError(f"{api}: KVStore type 'nccl' needs NCCL and a CUDA GPU; missing: "
                           f"{'; '.join(missing)}.  Install with {hint}, or use 'device' "
                           f"(sums on the GPUs without NCCL) or 'local'")
    return nccl


def check_dtype(api, key, dtype):
    """Refuses a dtype NCCL is not given by MXNet's store."""
    if np.dtype(dtype).name not in _NCCL_DTYPES:
        raise KVStoreError(f"KVStore.{api}: key {key!r} has dtype {np.dtype(dtype).name}; "
                           f"the 'nccl' store takes {', '.join(SUPPORTED_DTYPES)}")


class Clique:
    """The communicators of one set of GPUs (ranks in ascending device id)
    and a stream per GPU that their calls run on."""

    def __init__(self, nccl, device_ids):
        import cupy
        self._nccl = nccl
        self.device_ids = tuple(device_ids)
        self.rank = {d: r for r, d in enumerate(self.device_ids)}
        self._comms = nccl.NcclCommunicator.initAll(list(self.device_ids))
        self._streams = []
        for d in self.device_ids:
            with cupy.cuda.Device(d):
                self._streams.append(cupy.cuda.Stream(non_blocking=True))

    def _nccl_type(self, dtype):
        return getattr(self._nccl, _NCCL_DTYPES[np.dtype(dtype).name])

    def push_group(self, calls, reads, writes, priority, name):
        """Pushes one engine function that launches ``calls`` (each
        ``(op, args)`` from the methods below) as one NCCL group and waits
        for them; ``reads`` and ``writes`` are the NDArrays they use."""
        # The default argument holds the arrays (and so their memory) for as
        # long as the engine holds the function.
        def run(_arrays=(reads, writes)):
            self._nccl.groupStart()
            try:
                for op, args in calls:
                    op(*args)
            finally:
                self._nccl.groupEnd()
            for s in self._streams:
                s.synchronize()

        push_collective(run, reads, writes, priority, name)

    # Each returns the (op, args) of one rank's call; sizes are element counts.
    def reduce(self, dev, src, dst, root_dev):
        """Rank ``dev`` sends ``src``; the root's ``dst`` gets the sum."""
        r = self.rank[dev]
        return (self._comms[r].reduce,
                (device_pointer(src), device_pointer(dst) if dst is not None else 0, src.size,
                 self._nccl_type(src.dtype), self._nccl.NCCL_SUM, self.rank[root_dev],
                 self._streams[r].ptr))

    def bcast(self, dev, buf, root_dev):
        """The root's ``buf`` is copied into every other rank's ``buf``."""
        r = self.rank[dev]
        return (self._comms[r].bcast,
                (device_pointer(buf), buf.size, self._nccl_type(buf.dtype),
                 self.rank[root_dev], self._streams[r].ptr))

    def all_reduce(self, dev, src, dst):
        """Every rank's ``dst`` gets the sum of every rank's ``src``."""
        r = self.rank[dev]
        return (self._comms[r].allReduce,
                (device_pointer(src), device_pointer(dst), src.size,
                 self._nccl_type(src.dtype), self._nccl.NCCL_SUM, self._streams[r].ptr))


def distinct_gpus(arrays):
    """The device ids of ``arrays`` when there are several, all dense on
    GPUs, one per GPU (what an NCCL group can take); else None."""
    if len(arrays) < 2:
        return None
    ids = []
    for a in arrays:
        if a.stype != "default" or a.context.device_type != "gpu":
            return None
        ids.append(a.context.device_id)
    return ids if len(set(ids)) == len(ids) else None
