"""How the executor runs a ``_CrossDeviceCopy`` node, and the push order
of a pass that mixes such copies with prepared kernel calls.

A copy between devices is not a kernel (``PreparedCall`` checks that a
call's arrays share one context): it is ``NDArray.copyto``, which pushes
one engine op reading the source's variable and writing the target's,
on the copy workers when a GPU is on either side (MXNet's CopyFromTo), so
the engine orders it after the source's writer and before the target's
readers like any node.
"""
from mx_engine.base import MXNetError
from mx_ndarray import empty, invoke
from mx_ndarray.prepared import push_all

__all__ = ["CopyCall", "Steps"]


class CopyCall:
    """``dst[:] = src`` (req 'write' or 'inplace') or ``dst += src`` (req
    'add': the bytes land in a staging array on dst's device, then one add
    there) on every push."""

    def __init__(self, name, src, dst, req):
        if src.shape != dst.shape or src.dtype != dst.dtype:
            raise MXNetError(f"{name}: a device copy keeps shape and dtype, but the source "
                             f"is {src.dtype} {src.shape} and the target {dst.dtype} "
                             f"{dst.shape}")
        if req not in ("write", "inplace", "add"):
            raise MXNetError(f"{name}: req {req!r} is not supported by a device copy")
        self.name, self.src, self.dst, self.req = name, src, dst, req
        self._stage = (empty(dst.shape, ctx=dst.context, dtype=dst.dtype)
                       if req == "add" else None)

    def push(self, is_train=False):
        if self._stage is None:
            self.src.copyto(self.dst)
        else:
            self.src.copyto(self._stage)
            invoke("elemwise_add", [self.dst, self._stage], out=self.dst)


class Steps:
    """A pass's calls in push order: runs of PreparedCalls go to
    ``push_all`` in one go (its C loop), the copies between them one by one;
    with no copies it is a single ``push_all``."""

    def __init__(self):
        self._steps = []

    def append(self, call):
        if isinstance(call, CopyCall):
            self._steps.append(call)
        elif self._steps and isinstance(self._steps[-1], list):
            self._steps[-1].append(call)
        else:
            self._steps.append([call])

    def push(self, is_train):
        for step in self._steps:
            if isinstance(step, list):
                push_all(step, is_train)
            else:
                step.push(is_train)
