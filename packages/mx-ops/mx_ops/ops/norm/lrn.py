"""LRN (local response normalisation across channels), registered in the
OperatorProperty style with a native operator: MXNet's LRNProp, with a
hidden output ``tmp_norm`` that the backward reads, a backward that may
write the data gradient over the output gradient, and temporary space for
the backward's sums.  The operator itself is ``mx_ops.ops.norm._lrn_cpu.LRNOperator``,
a NativeOperator whose forward and backward run without the GIL."""
import math

from mx_ops.core._nn_common import same_float_types
from mx_ops.core._params import Param
from mx_ops.core.registry import ShapeError
from mx_ops.ext.operator import OperatorProperty, ResourceRequest, register_op_property
from mx_ops.ops.norm import _lrn_cpu

__all__ = ["LRNProp"]


class LRNProp(OperatorProperty):
    """Applies local response normalization to the input (NCHW), across
    channels: out = data * (knorm + alpha / nsize * sum of data^2 over the
    nsize channels around each one)^-beta.  Backward:
    _backward_LRN(output_grad, data, output, tmp_norm)."""

    params = {
        "alpha": Param("float", 1e-4, doc="The variance scaling parameter alpha in the LRN "
                                          "expression."),
        "beta": Param("float", 0.75, doc="The power parameter beta in the LRN expression."),
        "knorm": Param("float", 2.0, doc="The parameter k in the LRN expression."),
        "nsize": Param("int", low=1, doc="normalization window width in elements."),
    }
    native = True

    def list_outputs(self):
        return ["output", "tmp_norm"]

    def num_visible_outputs(self):
        return 1

    def infer_shape(self, in_shapes):
        shape = in_shapes[0]
        if len(shape) != 4:
            raise ShapeError(f"LRN: argument 'data' has shape {tuple(shape)}; it must be 4-D "
                             f"(batch, channel, height, width)")
        return [shape], [shape, shape], []

    def infer_type(self, in_types):
        t = same_float_types("LRN", lambda p: ["data"])(None, in_types)[0]
        return [t], [t, t], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        return [out_grad[0], in_data[0], out_data[0], out_data[1]]

    def backward_inplace_option(self, out_grad, in_data, out_data, in_grad):
        return [(out_grad[0], in_grad[0])]

    def backward_resource(self, in_shapes):
        return [ResourceRequest.TEMP_SPACE]

    def backward_workspace(self, in_shapes):
        # The sums' terms in the compute type: at most 8 bytes an element.
        return 8 * math.prod(in_shapes[0])

    def create_operator(self, ctx, in_shapes, in_dtypes):
        p = self.param
        return _lrn_cpu.LRNOperator(p.alpha, p.beta, p.knorm, p.nsize)


register_op_property("LRN", LRNProp)
