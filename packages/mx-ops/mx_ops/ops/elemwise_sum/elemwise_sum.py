"""Registration of add_n (alias ElementWiseSum): the elementwise sum of
``num_args`` arrays of one shape and dtype, as MXNet 1.x registers it
(src/operator/tensor/elemwise_sum.cc).  The gradient pass sums the several
gradient contributions of one entry with it.  Its gradient (each input gets
the output gradient) is in mx_ops.ops.elemwise.grad."""
from mx_ops.core._limits import MAX_COUNT
from mx_ops.core._params import Param
from mx_ops.core.gradient import apply, set_gradient
from mx_ops.core.registry import (OpDef, ShapeError, TypeInferenceError, computes, gpu_compute,
                                  register)
from mx_ops.ops.elemwise_sum import _elemwise_sum_cpu

# The CuPy twin, imported on the first GPU call (core.registry.gpu_compute).
_ELEMWISE_SUM_GPU = "mx_ops.ops.elemwise_sum._elemwise_sum_gpu"

_KERNELS = _elemwise_sum_cpu.kernels()


def _sum_shape(params, shapes):
    first = tuple(shapes[0])
    for i, s in enumerate(shapes[1:], 1):
        if tuple(s) != first:
            raise ShapeError(f"add_n: argument 'arg{i}' has shape {tuple(s)}, which differs "
                             f"from 'arg0' {first}; every input must have one shape")
    return [first]


def _sum_type(params, dtypes):
    for i, d in enumerate(dtypes[1:], 1):
        if d != dtypes[0]:
            raise TypeInferenceError(f"add_n: argument 'arg{i}' has dtype {d}, which differs "
                                     f"from 'arg0' {dtypes[0]}")
    return [dtypes[0]]


register(OpDef(
    "add_n", arguments=("args",), key_var_num_args="num_args",
    input_docs={"args": "The arrays to sum, all of one shape and dtype."},
    params={"num_args": Param("int", low=1, high=MAX_COUNT, doc="Number of inputs to be summed.")},
    infer_shape=_sum_shape, infer_type=_sum_type,
    compute=computes(_KERNELS["add_n"], gpu_compute(_ELEMWISE_SUM_GPU, "add_n")),
    inplace=((0, 0),), aliases=("ElementWiseSum",),
    doc="Adds all input arguments element-wise: add_n(a1, a2, ..., an) = a1 + a2 + ... + an, "
        "summed left to right in one pass (float16 in float32); every input has one shape "
        "and dtype.  More efficient than n - 1 calls of elemwise_add."))


# --- gradients (makers over core.gradient's apply) ----------------------------------
def _add_n_maker(node, ograds):
    """MXNet's ElementWiseSumGrad: each input gets the output gradient
    through an identity node of its own, so that every input's gradient is
    a distinct entry (a memory planner may then write each in place)."""
    return [apply("_copy", ograds[0]) for _ in node.inputs]


set_gradient("add_n", _add_n_maker)
