"""Integer division and modulo (src/int_arith.h: no value traps; 32-bit
division runs as vectorised double division) and the float -> integer
conversion, on 10M elements through mx_ops.invoke, against NumPy's own
integer kernels (floor division, so not the same operation, but the same
amount of work) and the float32 division they should stay near."""
import numpy as np

from mx_ops import invoke

N = 10_000_000


class IntDivide:
    """x / y and x % y over random operands, with no zero divisor."""
    params = [["int32", "int64"]]
    param_names = ["dtype"]

    def setup(self, dtype):
        rng = np.random.default_rng(0)
        info = np.iinfo(dtype)
        self.x = rng.integers(info.min, info.max, N, dtype=dtype, endpoint=True)
        self.y = rng.integers(info.min, info.max, N, dtype=dtype, endpoint=True)
        self.y[self.y == 0] = 1
        self.out = np.empty(N, dtype)

    def time_div(self, dtype):
        invoke("elemwise_div", [self.x, self.y], out=self.out)

    def time_mod(self, dtype):
        invoke("_mod", [self.x, self.y], out=self.out)

    def time_div_scalar(self, dtype):
        invoke("_div_scalar", [self.x], out=self.out, scalar=7.0)

    def time_numpy_floor_divide(self, dtype):
        np.floor_divide(self.x, self.y, out=self.out)


class FloatDivide:
    """The float32 division the integer ones compare with."""

    def setup(self):
        rng = np.random.default_rng(0)
        self.x, self.y = rng.standard_normal((2, N), dtype=np.float32)
        self.out = np.empty(N, np.float32)

    def time_div(self):
        invoke("elemwise_div", [self.x, self.y], out=self.out)


class CastToInt:
    """Floats into integers by x86-64's rule (NaN, out of range: MIN)."""
    params = [["float32:int32", "float32:uint8", "float64:int64"]]
    param_names = ["src:dst"]

    def setup(self, pair):
        src, dst = pair.split(":")
        self.x = (np.random.default_rng(0).standard_normal(N) * 1e3).astype(src)
        self.dst = dst
        self.out = np.empty(N, dst)

    def time_cast(self, pair):
        invoke("Cast", [self.x], out=self.out, dtype=self.dst)
