"""Gradient compression, MXNet 1.9.1's '2bit': each value of the gradient
plus the residual left from earlier steps is sent as +threshold,
-threshold or 0, 16 values packed into one float32 word, and what was not
sent stays in the residual (error feedback).  The kernels are in
_native.pyx (CPU, no GIL) and _native_gpu.py (CuPy)."""
import math

from mx_kvstore import _native
from mx_kvstore.errors import KVStoreError

_TYPES = ("2bit",)


class GradientCompression:
    """The parameters of ``set_gradient_compression`` and the pushes that
    compress and decompress with them."""

    def __init__(self, params):
        if not isinstance(params, dict):
            raise TypeError(f"set_gradient_compression: compression_params must be a dict, "
                            f"got {type(params).__name__}")
        unknown = set(params) - {"type", "threshold"}
        if unknown:
            raise KVStoreError(f"set_gradient_compression: unknown parameter(s) "
                               f"{', '.join(sorted(map(str, unknown)))}; 2bit takes "
                               f"'type' and 'threshold'")
        if "type" not in params:
            raise KVStoreError("set_gradient_compression: required parameter 'type' is "
                               "missing (use {'type': '2bit', 'threshold': 0.5})")
        self.type = str(params["type"])
        if self.type not in _TYPES:
            raise KVStoreError(f"set_gradient_compression: unknown type for gradient "
                               f"compression {self.type!r}; supported: {', '.join(_TYPES)}")
        try:
            self.threshold = float(params.get("threshold", 0.5))
        except (TypeError, ValueError):
            raise KVStoreError(f"set_gradient_compression: threshold must be a number, got "
                               f"{params['threshold']!r}") from None
        if not self.threshold > 0 or math.isinf(self.threshold):
            raise KVStoreError(f"set_gradient_compression: threshold must be greater than 0 "
                               f"and finite, got {self.threshold}")

    def params(self):
        """The parameters as a dict of strings (what a server is sent)."""
        return {"type": self.type, "threshold": repr(self.threshold)}

    @staticmethod
    def packed_size(size):
        """float32 words holding ``size`` compressed values."""
        return (size + 15) // 16

    def check(self, key, value):
        """Refuses values 2bit cannot compress."""
        if value.stype != "default" or value.dtype.name != "float32":
            raise KVStoreError(f"KVStore.push: 2bit gradient compression takes dense float32 "
                               f"values; key {key!r} has a {value.stype} {value.dtype.name} "
                               f"value")

    def quantize(self, grad, residual, out, priority=0):
        """Pushes ``residual += grad`` and its quantisation into ``out``."""
        _native.push_quantize_2bit(grad, residual, out, self.threshold, priority)

    def dequantize_sum(self, packed, out, priority=0):
        """Pushes ``out = sum of the dequantised arrays of packed``."""
        _native.push_dequantize_sum_2bit(list(packed), out, self.threshold, priority)
