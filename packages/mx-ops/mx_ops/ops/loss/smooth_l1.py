"""smooth_l1, registered through the SimpleOp API as the design notes'
example: a unary function with the scalar sigma, whose gradient reads the
input (UnaryGradFunctionT2) and may overwrite the output gradient
(kInplaceOutIn).  CPU: native kernels (smooth_l1_cpu.h) called by
address without the GIL; GPU: CuPy RawKernels (mx_ops.ops.loss._smooth_l1_gpu),
registered where CuPy is installed and imported on first use."""
import importlib.util

from mx_ops.ext.simple_op import (INPLACE_OUT_IN, NO_INPLACE, UnaryFunction, UnaryGradFunctionT2,
                                  register_simple_op)
from mx_ops.ops.loss import _smooth_l1_cpu

_KERNELS = _smooth_l1_cpu.kernels()


def _have_cupy():
    try:
        return importlib.util.find_spec("cupy") is not None
    except (ImportError, ValueError):    # a blocked or half-imported cupy entry
        return False


def _gpu_forward(src, env, ret, req, ctx):
    from mx_ops.ops.loss import _smooth_l1_gpu
    _smooth_l1_gpu.forward(src, env, ret, req, ctx)


def _gpu_backward(out_grad, in_data0, env, in_grad, req, ctx):
    from mx_ops.ops.loss import _smooth_l1_gpu
    _smooth_l1_gpu.backward(out_grad, in_data0, env, in_grad, req, ctx)


_op = (register_simple_op("smooth_l1")
       .set_function("cpu", UnaryFunction(_KERNELS["forward"]), NO_INPLACE)
       .set_gradient("cpu", UnaryGradFunctionT2(_KERNELS["backward"]), INPLACE_OUT_IN)
       .set_enable_scalar(True)
       .set_dtypes(("float16", "float32", "float64"))
       .describe("Calculate Smooth L1 Loss(lhs, scalar): f(x) = 0.5 (sigma x)^2 where "
                 "|x| < 1 / sigma^2, else |x| - 0.5 / sigma^2, with sigma = scalar.  "
                 "Backward: _backward_smooth_l1(out_grad, data)."))
if _have_cupy():
    _op.set_function("gpu", UnaryFunction(_gpu_forward), NO_INPLACE)
    _op.set_gradient("gpu", UnaryGradFunctionT2(_gpu_backward), INPLACE_OUT_IN)
