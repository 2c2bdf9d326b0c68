"""SpatialTransformer and _backward_SpatialTransformer with MXNet 1.x's
names and parameters (src/operator/spatial_transformer-inl.h): the affine
GridGenerator of ``loc`` (N, 6) for target_shape, then BilinearSampler of
``data`` (N, C, H, W) at that grid, in one kernel (spatial_cpu.h).
MXNet lists the outputs ("output", "grid_dst", "grid_src") and shows one:
grid_dst is the target grid (3, H*W), grid_src the sampling grid
(N, 2, H, W).  transform_type and sampler_type are required and have one
choice each, as in MXNet."""
from mx_ops.core._nn_common import same_float_types
from mx_ops.core._params import Param
from mx_ops.core.gradient import backward_op, set_gradient
from mx_ops.core.registry import OpDef, ShapeError, computes, gpu_compute, register
from mx_ops.ops.spatial import _spatial_cpu
from mx_ops.ops.spatial.grid_generator import _target

# The CuPy twin, imported on the first GPU call (core.registry.gpu_compute).
_SPATIAL_GPU = "mx_ops.ops.spatial._spatial_gpu"
_KERNELS = _spatial_cpu.kernels()

PARAMS = {
    "target_shape": Param("shape", (0, 0), doc="output shape(h, w) of spatial transformer: "
                                               "(y, x)"),
    "transform_type": Param("str", choices=("affine",), doc="transformation type"),
    "sampler_type": Param("str", choices=("bilinear",), doc="sampling type"),
    "cudnn_off": Param("bool", None, doc="whether to turn cudnn off (accepted; the kernels "
                                         "here do not use cuDNN)"),
}


def geometry(op, params, data, loc):
    """(output, grid_dst, grid_src) shapes."""
    data, loc = tuple(data), tuple(loc)
    if len(data) != 4:
        raise ShapeError(f"{op}: 'data' must be 4-D (batch, channel, height, width), got {data}")
    if len(loc) != 2 or loc[1] != 6:
        raise ShapeError(f"{op}: 'loc' must be (batch, 6) for transform_type 'affine', got "
                         f"{loc}")
    if loc[0] != data[0]:
        raise ShapeError(f"{op}: 'loc' has batch {loc[0]}, 'data' {data[0]}")
    h, w = _target(op, params)
    return [(data[0], data[1], h, w), (3, h * w), (data[0], 2, h, w)]


def _backward_shape(params, shapes):
    op = "_backward_SpatialTransformer"
    want = geometry(op, params, shapes[1], shapes[2])[0]
    if tuple(shapes[0]) != want:
        raise ShapeError(f"{op}: 'ograd' has shape {tuple(shapes[0])}, expected {want}")
    return [tuple(shapes[1]), tuple(shapes[2])]


register(OpDef(
    "SpatialTransformer", arguments=("data", "loc"), outputs=("output", "grid_dst", "grid_src"),
    params=PARAMS, num_visible_outputs=1,
    input_docs={"data": "Input data to the SpatialTransformerOp.",
                "loc": "localisation net, the output dim should be 6 when transform_type is "
                       "affine. You shold initialize the weight and bias with identity "
                       "tranform."},
    infer_shape=lambda p, s: geometry("SpatialTransformer", p, s[0], s[1]),
    infer_type=same_float_types("SpatialTransformer", lambda p: ["data", "loc"], nout=3),
    compute=computes(_KERNELS["SpatialTransformer"],
                     gpu_compute(_SPATIAL_GPU, "spatial_transformer")),
    doc="Applies a spatial transformer to input feature map: samples 'data' bilinearly "
        "(zeros outside) at the affine grid of 'loc' over target_shape."))

register(OpDef(
    "_backward_SpatialTransformer", arguments=("ograd", "data", "loc"),
    outputs=("data_grad", "loc_grad"), params=PARAMS, infer_shape=_backward_shape,
    infer_type=same_float_types("_backward_SpatialTransformer",
                                lambda p: ["ograd", "data", "loc"], nout=2),
    compute=computes(_KERNELS["_backward_SpatialTransformer"],
                     gpu_compute(_SPATIAL_GPU, "spatial_transformer_backward")),
    differentiable=False,
    doc="SpatialTransformer's gradients of 'data' and 'loc' from the output's."))

# grid_dst and grid_src (hidden outputs) take no gradient, as in MXNet.
set_gradient("SpatialTransformer", backward_op(
    "SpatialTransformer", lambda n, g: [g[0], n.inputs[0], n.inputs[1]]))
