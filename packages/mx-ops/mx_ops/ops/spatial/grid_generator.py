"""GridGenerator and _backward_GridGenerator with MXNet 1.x's names and
parameters (src/operator/grid_generator-inl.h).

The output is a sampling grid (N, 2, H, W) of normalised coordinates
(channel 0 x, channel 1 y, both in [-1, 1] over the target) for
BilinearSampler:
- 'affine': data (N, 6) is an affine map theta (N, 2, 3) applied to the
  target grid of target_shape (H, W): out[n, :, h, w] = theta[n] (x_w, y_h, 1);
- 'warp': data (N, 2, H, W) is a flow in pixels added to each pixel's own
  position, then normalised.
MXNet lists the outputs ("output", "grid_dst") and shows one: grid_dst is
the target grid ((3, H*W) rows x, y, 1 for 'affine'; (2, H, W) pixel
positions for 'warp').  Only float32 is registered, as in MXNet.  The
backward reads the output gradient only (the target grid is recomputed)."""
import struct

from mx_ops.core._nn_common import same_float_types
from mx_ops.core._params import Param
from mx_ops.core.gradient import backward_op, set_gradient
from mx_ops.core.partial_infer import set_infer_shape_partial
from mx_ops.core.registry import OpDef, ShapeError, computes, gpu_compute, register
from mx_ops.ops.spatial import _spatial_cpu

# The CuPy twin, imported on the first GPU call (core.registry.gpu_compute).
_SPATIAL_GPU = "mx_ops.ops.spatial._spatial_gpu"
_KERNELS = _spatial_cpu.kernels()

PARAMS = {
    "transform_type": Param("str", choices=("affine", "warp"),
                            doc="The type of transformation. For `affine`, input data should "
                                "be an affine matrix of size (batch, 6). For `warp`, input "
                                "data should be an optical flow of size (batch, 2, h, w)."),
    "target_shape": Param("shape", (0, 0),
                          doc="Specifies the output shape (H, W). This is required if "
                              "transformation type is `affine`. If transformation type is "
                              "`warp`, this parameter is ignored."),
}


def pack(params, shapes=None):
    """mxop::GridParam."""
    return struct.pack("=q", params["transform_type"] == "warp")


def _target(op, params):
    """(H, W) of an affine grid."""
    target = tuple(params["target_shape"])
    if len(target) != 2 or min(target) <= 0:
        raise ShapeError(f"{op}: argument 'target_shape' must be two positive sizes (H, W) "
                         f"for transform_type 'affine', got {target}")
    return target


def geometry(op, params, data):
    """(output shape, grid_dst shape) for 'data' of shape ``data`` (0 = unknown)."""
    data = tuple(data)
    if params["transform_type"] == "affine":
        if len(data) != 2 or data[1] not in (0, 6):
            raise ShapeError(f"{op}: 'data' must be (batch, 6) for transform_type 'affine', "
                             f"got {data}")
        h, w = _target(op, params)
        return (data[0], 2, h, w), (3, h * w)
    if len(data) != 4 or data[1] not in (0, 2):
        raise ShapeError(f"{op}: 'data' must be a flow (batch, 2, H, W) for transform_type "
                         f"'warp', got {data}")
    return data, (2,) + data[2:]


def _backward_shape(params, shapes):
    og = tuple(shapes[0])
    if len(og) != 4 or og[1] != 2:
        raise ShapeError(f"_backward_GridGenerator: 'ograd' must be (batch, 2, H, W), got {og}")
    return [(og[0], 6) if params["transform_type"] == "affine" else og]


register(OpDef(
    "GridGenerator", arguments=("data",), outputs=("output", "grid_dst"), params=PARAMS,
    num_visible_outputs=1,
    input_docs={"data": "Input data to the function."},
    infer_shape=lambda p, s: list(geometry("GridGenerator", p, s[0])),
    infer_type=same_float_types("GridGenerator", lambda p: ["data"], ("float32",), nout=2),
    compute=computes(_KERNELS["GridGenerator"],
                     gpu_compute(_SPATIAL_GPU, "grid_generator", pack)),
    pack_params=pack,
    doc="Generates 2D sampling grid for bilinear sampling: from an affine matrix "
        "(transform_type 'affine', data (batch, 6), target_shape (H, W)) or an optical flow "
        "(transform_type 'warp', data (batch, 2, H, W)); the output (batch, 2, H, W) holds "
        "normalised x and y in [-1, 1]."))

register(OpDef(
    "_backward_GridGenerator", arguments=("ograd",), outputs=("data_grad",), params=PARAMS,
    infer_shape=_backward_shape,
    infer_type=same_float_types("_backward_GridGenerator", lambda p: ["ograd"], ("float32",)),
    compute=computes(_KERNELS["_backward_GridGenerator"],
                     gpu_compute(_SPATIAL_GPU, "grid_generator_backward", pack)),
    pack_params=pack, differentiable=False,
    doc="GridGenerator's gradient of 'data' from the output's: the target grid's "
        "coordinates summed against it ('affine'), or it scaled back to pixels ('warp')."))

# grid_dst (hidden output 1) takes no gradient, as in MXNet.
set_gradient("GridGenerator", backward_op("GridGenerator", lambda n, g: [g[0]]))


def _grid_generator(params, ins, outs):
    """The outputs follow from the data's shape with its batch unknown (and
    from target_shape for 'affine')."""
    if ins[0] is None:
        return ins, outs
    out, dst = geometry("GridGenerator", params, ins[0])
    outs.assign(0, out, why=f"transform_type '{params['transform_type']}'")
    outs.assign(1, dst, why=f"transform_type '{params['transform_type']}'")
    return ins, outs


set_infer_shape_partial("GridGenerator", _grid_generator)
