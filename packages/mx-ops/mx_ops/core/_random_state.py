"""The seam between random operators and the resource manager, shared by
both invokers (mx_ops.invoke and NDArray's invoke).

When an operator requests RANDOM or PARALLEL_RANDOM, the call's counter
values are reserved from the context's RandomResource *when it is pushed*
and travel with the call as an MXRandomState {uint64 seed, offset} appended
to the packed parameters at an 8-byte-aligned position (tblob.h).  Why no
engine dependency on the resource's var: the kernel reads only those two
numbers, and the Philox stream defines element i from (seed, offset + i)
alone, so draws already follow program order and independent draws may run
in parallel; seeding changes what later pushes reserve and nothing else.
"""
import struct

from mx_storage import resource
from mx_storage.resource import ResourceRequest

__all__ = ["random_kind", "pack_call", "random_draws", "with_state", "state_offset"]

_RANDOM_KINDS = (ResourceRequest.RANDOM, ResourceRequest.PARALLEL_RANDOM)
_STATE = struct.Struct("=QQ")     # MXRandomState


def random_kind(op):
    """The random resource kind ``op`` requests, or None."""
    for kind in op.resources:
        if kind in _RANDOM_KINDS:
            return kind
    return None


def pack_call(op, kwargs, in_shapes, ctx):
    """``(packed parameters, state)``: the operator's parameter block and,
    for a random operator, its MXRandomState appended (state is then the
    ``(seed, offset)`` reserved on ``ctx``; else None)."""
    packed = op.pack_params(kwargs, in_shapes) if op.pack_params is not None else b""
    kind = random_kind(op)
    if kind is None:
        return packed, None
    state = resource.request(ctx, kind).reserve(random_draws(op, kwargs, in_shapes))
    return with_state(packed, state), state


def random_draws(op, kwargs, in_shapes):
    """How many counter values one call of random operator ``op`` consumes."""
    if op.random_draws is None:
        raise TypeError(f"{op.name}: requests a random resource but registers no "
                        f"'random_draws'")
    return int(op.random_draws(kwargs, in_shapes))


def with_state(packed, state):
    """``packed`` with MXRandomState ``(seed, offset)`` appended at the
    first 8-byte-aligned position (``state_offset(len(packed))``)."""
    return packed + b"\0" * (state_offset(len(packed)) - len(packed)) + _STATE.pack(*state)


def state_offset(params_size):
    """Where the MXRandomState starts after a parameter block of
    ``params_size`` bytes (tblob.h's MX_RANDOM_STATE_AT): invokers that
    pack a call's parameters once (a bound executor's prepared calls)
    write each push's reservation there."""
    return (params_size + 7) & ~7
