"""BilinearSampler and _backward_BilinearSampler with MXNet 1.x's names and
parameters (src/operator/bilinear_sampler-inl.h).

out[n, c, h, w] interpolates data[n, c] (N, C, H, W) bilinearly at the grid
point grid[n, :, h, w] (grid (N, 2, Ho, Wo), x then y, normalised to
[-1, 1] over the data's columns and rows); taps outside the data read 0.
MXNet lists the outputs ("output", "tmp") and shows one: tmp (N, Ho, Wo, 2)
is the grid in cuDNN's point-by-point layout.  The backward,
_backward_BilinearSampler(ograd, data, grid), gives the gradients of data
and grid."""
from mx_ops.core._nn_common import same_float_types
from mx_ops.core._params import Param
from mx_ops.core.gradient import backward_op, set_gradient
from mx_ops.core.registry import OpDef, ShapeError, computes, gpu_compute, register
from mx_ops.ops.spatial import _spatial_cpu

# The CuPy twin, imported on the first GPU call (core.registry.gpu_compute).
_SPATIAL_GPU = "mx_ops.ops.spatial._spatial_gpu"
_KERNELS = _spatial_cpu.kernels()

PARAMS = {
    "cudnn_off": Param("bool", None, doc="whether to turn cudnn off (accepted; the kernels "
                                         "here do not use cuDNN)"),
}


def _check(op, data, grid):
    data, grid = tuple(data), tuple(grid)
    if len(data) != 4:
        raise ShapeError(f"{op}: 'data' must be 4-D (batch, channel, height, width), got {data}")
    if len(grid) != 4 or grid[1] != 2:
        raise ShapeError(f"{op}: 'grid' must be (batch, 2, height, width), got {grid}")
    if grid[0] != data[0]:
        raise ShapeError(f"{op}: 'grid' has batch {grid[0]}, 'data' {data[0]}")
    return data, grid


def _shape(params, shapes):
    data, grid = _check("BilinearSampler", shapes[0], shapes[1])
    return [(data[0], data[1]) + grid[2:], (grid[0],) + grid[2:] + (2,)]


def _backward_shape(params, shapes):
    op = "_backward_BilinearSampler"
    data, grid = _check(op, shapes[1], shapes[2])
    want = (data[0], data[1]) + grid[2:]
    if tuple(shapes[0]) != want:
        raise ShapeError(f"{op}: 'ograd' has shape {tuple(shapes[0])}, expected {want}")
    return [data, grid]


register(OpDef(
    "BilinearSampler", arguments=("data", "grid"), outputs=("output", "tmp"), params=PARAMS,
    num_visible_outputs=1,
    input_docs={"data": "Input data to the BilinearsamplerOp.",
                "grid": "Input grid to the BilinearsamplerOp.grid has two channels: x_src, "
                        "y_src"},
    infer_shape=_shape,
    infer_type=same_float_types("BilinearSampler", lambda p: ["data", "grid"], nout=2),
    compute=computes(_KERNELS["BilinearSampler"], gpu_compute(_SPATIAL_GPU, "bilinear_sampler")),
    doc="Applies bilinear sampling to input feature map: out[n, c, h, w] interpolates "
        "data[n, c] at (x, y) = grid[n, :, h, w], normalised to [-1, 1]; points outside "
        "read zeros."))

register(OpDef(
    "_backward_BilinearSampler", arguments=("ograd", "data", "grid"),
    outputs=("data_grad", "grid_grad"), params=PARAMS, infer_shape=_backward_shape,
    infer_type=same_float_types("_backward_BilinearSampler",
                                lambda p: ["ograd", "data", "grid"], nout=2),
    compute=computes(_KERNELS["_backward_BilinearSampler"],
                     gpu_compute(_SPATIAL_GPU, "bilinear_sampler_backward")),
    differentiable=False,
    doc="BilinearSampler's gradients of 'data' and 'grid' from the output's."))

# tmp (hidden output 1) takes no gradient, as in MXNet.
set_gradient("BilinearSampler", backward_op(
    "BilinearSampler", lambda n, g: [g[0], n.inputs[0], n.inputs[1]]))
