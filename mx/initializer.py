"""``mx.initializer`` (also ``mx.init``): weight initializers, as in MXNet 1.9.1.

An initializer is called as ``init(InitDesc(name, attrs), array)``.  A
symbol variable's ``__init__`` attribute (the JSON an initializer's
``dumps()`` writes, e.g. ``'["zero", {}]'`` on BatchNorm's moving_mean)
wins; otherwise the name's ending picks the rule: ``weight`` -> the
initializer's own distribution, ``bias``/``beta``/``min`` -> 0,
``gamma``/``max`` -> 1.  The random initializers draw with
``mx.nd.random`` straight into the array, on its device, without a NumPy
round trip.
"""
import json
import logging
import math
import re
import warnings

import numpy as np

from mx import ndarray
from mx import _registry
from mx.ndarray import NDArray

__all__ = ["InitDesc", "Initializer", "register", "alias", "create", "Load", "Mixed", "Zero",
           "One", "Constant", "Uniform", "Normal", "Orthogonal", "Xavier", "MSRAPrelu",
           "Bilinear", "LSTMBias", "FusedRNN"]


class InitDesc(str):
    """A parameter name with the attributes of its variable.

    Parameters
    ----------
    name : str
        Name of the variable.
    attrs : dict of str to str
        Its attributes (``Symbol.attr_dict()[name]``); ``__init__`` names an
        initializer for it.
    global_init : Initializer
        The initializer to fall back to (FusedRNN uses it for the parts).
    """
    def __new__(cls, name, attrs=None, global_init=None):
        ret = super().__new__(cls, name)
        ret.attrs = attrs or {}
        ret.global_init = global_init
        return ret


# (suffix, method) in MXNet 1.9.1's order for InitDesc calls: the first match wins.
_DESC_RULES = (("weight", "_init_weight"), ("bias", "_init_bias"), ("gamma", "_init_gamma"),
               ("beta", "_init_beta"), ("min", "_init_zero"), ("max", "_init_one"),
               ("weight_quantize", "_init_quantized_weight"),
               ("bias_quantize", "_init_quantized_bias"))
# Plain-string calls (deprecated in MXNet) keep the older, longer table.
_LEGACY_RULES = (("bias", "_init_bias"), ("gamma", "_init_gamma"), ("beta", "_init_beta"),
                 ("weight", "_init_weight"), ("moving_mean", "_init_zero"),
                 ("moving_var", "_init_one"), ("moving_inv_var", "_init_zero"),
                 ("moving_avg", "_init_zero"), ("min", "_init_zero"), ("max", "_init_one"))


class Initializer:
    """The base class of initializers; subclasses define ``_init_weight``."""
    def __init__(self, **kwargs):
        self._kwargs = kwargs
        self._verbose = False
        self._print_func = None

    def set_verbosity(self, verbose=False, print_func=None):
        """Logs a statistic of each initialized array when ``verbose``.

        ``print_func(array) -> str`` defaults to ``norm(x) / sqrt(x.size)``;
        computing it waits for the array.
        """
        self._verbose = verbose
        if print_func is None:
            def print_func(x):
                return str((ndarray.norm(x) / math.sqrt(x.size)).asscalar())
        self._print_func = print_func
        return self

    def _verbose_print(self, desc, init, arr):
        if self._verbose and self._print_func:
            logging.info("Initialized %s as %s: %s", desc, init, self._print_func(arr))

    def dumps(self):
        """The JSON string ``create`` reads back: ``'["normal", {"sigma": 0.5}]'``."""
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])

    def __call__(self, desc, arr):
        """Initializes ``arr`` (an NDArray) for the parameter ``desc`` (an InitDesc)."""
        if not isinstance(desc, InitDesc):
            self._legacy_init(desc, arr)
            return
        if desc.global_init is None:
            desc.global_init = self
        init = desc.attrs.get("__init__", "")
        if init:
            create(init)._init_weight(desc, arr)
            self._verbose_print(desc, init, arr)
            return
        for suffix, method in _DESC_RULES:
            if desc.endswith(suffix):
                getattr(self, method)(desc, arr)
                self._verbose_print(desc, suffix, arr)
                return
        self._init_default(desc, arr)

    def _legacy_init(self, name, arr):
        warnings.warn("Calling initializer with init(str, NDArray) has been deprecated. "
                      "Please use init(mx.init.InitDesc(...), NDArray) instead.",
                      DeprecationWarning, stacklevel=3)
        if not isinstance(name, str):
            raise TypeError(f"{type(self).__name__}: the parameter name must be a str, "
                            f"got {type(name).__name__}")
        if not isinstance(arr, NDArray):
            raise TypeError(f"{type(self).__name__}: the array for {name!r} must be an "
                            f"NDArray, got {type(arr).__name__}")
        if name.startswith("upsampling"):
            self._init_bilinear(name, arr)
        elif name.startswith("stn_loc") and name.endswith("weight"):
            self._init_zero(name, arr)
        elif name.startswith("stn_loc") and name.endswith("bias"):
            self._init_loc_bias(name, arr)
        else:
            for suffix, method in _LEGACY_RULES:
                if name.endswith(suffix):
                    getattr(self, method)(name, arr)
                    return
            self._init_default(name, arr)

    def _init_bilinear(self, _, arr):
        arr[:] = _bilinear_kernel(arr.shape)

    def _init_loc_bias(self, name, arr):
        if arr.shape[0] != 6:
            raise ValueError(f"{type(self).__name__}: the spatial transformer bias {name!r} "
                             f"must have 6 entries, got shape {arr.shape}")
        arr[:] = np.array([1.0, 0, 0, 0, 1.0, 0])

    def _init_zero(self, _, arr):
        arr[:] = 0.0

    def _init_one(self, _, arr):
        arr[:] = 1.0

    def _init_bias(self, _, arr):
        arr[:] = 0.0

    def _init_quantized_bias(self, _, arr):
        arr[:] = 0

    def _init_gamma(self, _, arr):
        arr[:] = 1.0

    def _init_beta(self, _, arr):
        arr[:] = 0.0

    def _init_weight(self, name, arr):
        raise NotImplementedError(f"{type(self).__name__} must override _init_weight "
                                  f"(called for {name!r})")

    def _init_quantized_weight(self, _, arr):
        # One integer in [-127, 127) for the whole array, as MXNet 1.9.1 draws it.
        value = ndarray.random.randint(-127, 127, shape=(1,), dtype="int32").asnumpy()[0]
        arr[:] = int(value)

    def _init_default(self, name, _):
        raise ValueError(f"Unknown initialization pattern for {name}. Default initialization "
                         'is now limited to "weight", "bias", "gamma" (1.0), and "beta" (0.0). '
                         "Please use mx.sym.Variable(init=mx.init.*) to set initialization "
                         "pattern")

    def __eq__(self, other):
        if not isinstance(other, Initializer):
            return NotImplemented
        return type(self) is type(other) and self._kwargs == other._kwargs

    __hash__ = object.__hash__


_register = _registry.get_register_func(Initializer, "initializer")
alias = _registry.get_alias_func(Initializer, "initializer")
create = _registry.get_create_func(Initializer, "initializer")


def register(klass):
    """Registers a custom Initializer subclass under its lower-cased class
    name, so ``create(name)`` and ``__init__`` attributes can name it."""
    return _register(klass)


def _bilinear_kernel(shape):
    """The bilinear upsampling filter of ``shape`` (N, C, H, W), as float32."""
    if len(shape) != 4:
        raise ValueError(f"Bilinear: the weight must be 4-D (N, C, H, W), got shape {shape}")
    f = np.ceil(shape[3] / 2.0)
    c = (2 * f - 1 - f % 2) / (2.0 * f)
    # MXNet 1.9.1 scales both axes by the width's f.
    wx = 1 - np.abs(np.arange(shape[3]) / f - c)
    wy = 1 - np.abs(np.arange(shape[2]) / f - c)
    return np.broadcast_to(np.outer(wy, wx).astype(np.float32), shape)


class Load:
    """Initializes parameters from a ``.params`` file or a dict of NDArrays.

    The ``arg:``/``aux:`` prefixes of saved names are dropped.  Names not
    found go to ``default_init``.
    """
    def __init__(self, param, default_init=None, verbose=False):
        if isinstance(param, str):
            param = ndarray.load(param)
        if not isinstance(param, dict):
            raise TypeError("Load: 'param' must be a file name or a dict of str to NDArray, "
                            f"got {type(param).__name__}")
        self.param = {name[4:] if name.startswith(("arg:", "aux:")) else name: arr
                      for name, arr in param.items()}
        self.default_init = default_init
        self.verbose = verbose

    def __call__(self, name, arr):
        if name in self.param:
            src = self.param[name]
            if arr.shape != src.shape:
                raise ValueError(f"Parameter {name} cannot be initialized from loading. Shape "
                                 f"mismatch, target {arr.shape} vs loaded {src.shape}")
            arr[:] = src
            if self.verbose:
                logging.info("Initialized %s by loading", name)
            return
        if self.default_init is None:
            raise ValueError(f"Cannot Initialize {name}. Not found in loaded param and no "
                             "default Initializer is provided.")
        self.default_init(name, arr)
        if self.verbose:
            logging.info("Initialized %s by default", name)


class Mixed:
    """Initializes each parameter with the first initializer whose regular
    expression matches its name (``re.match``)."""
    def __init__(self, patterns, initializers):
        if len(patterns) != len(initializers):
            raise ValueError(f"Mixed: {len(patterns)} patterns but {len(initializers)} "
                             "initializers; they pair up one to one")
        self.map = list(zip([re.compile(p) for p in patterns], initializers))

    def __call__(self, name, arr):
        for prog, init in self.map:
            if prog.match(name):
                init(name, arr)
                return
        raise ValueError(f"Parameter name {name} did not match any pattern. Consider adding "
                         'a ".*" pattern at the end with a default Initializer.')


@register
@alias("zeros")
class Zero(Initializer):
    """Initializes weights to zero."""
    def __init__(self):
        super().__init__()

    def _init_weight(self, _, arr):
        arr[:] = 0


@register
@alias("ones")
class One(Initializer):
    """Initializes weights to one."""
    def __init__(self):
        super().__init__()

    def _init_weight(self, _, arr):
        arr[:] = 1


@register
class Constant(Initializer):
    """Initializes weights to ``value``: a scalar, or an array (NDArray,
    NumPy or nested list) of the parameter's shape."""
    def __init__(self, value):
        super().__init__(value=value)
        self.value = value

    def _init_weight(self, _, arr):
        value = self.value
        arr[:] = np.asarray(value, dtype=np.float64) if isinstance(value, list) else value

    def dumps(self):
        val = self._kwargs["value"]
        if isinstance(val, np.ndarray):
            self._kwargs["value"] = val.tolist()
        elif isinstance(val, NDArray):
            self._kwargs["value"] = val.asnumpy().tolist()
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])


@register
class Uniform(Initializer):
    """Initializes weights uniformly in [-scale, scale)."""
    def __init__(self, scale=0.07):
        super().__init__(scale=scale)
        self.scale = scale

    def _init_weight(self, _, arr):
        ndarray.random.uniform(-self.scale, self.scale, shape=arr.shape, out=arr)


@register
class Normal(Initializer):
    """Initializes weights from N(0, sigma**2)."""
    def __init__(self, sigma=0.01):
        super().__init__(sigma=sigma)
        self.sigma = sigma

    def _init_weight(self, _, arr):
        ndarray.random.normal(0, self.sigma, shape=arr.shape, out=arr)


@register
class Orthogonal(Initializer):
    """Initializes weights as ``scale`` times an orthogonal matrix (Saxe et
    al., 2013): the SVD of a uniform (``rand_type='uniform'``) or normal
    draw of shape (shape[0], prod(shape[1:])).  The SVD runs in NumPy."""
    def __init__(self, scale=1.414, rand_type="uniform"):
        super().__init__(scale=scale, rand_type=rand_type)
        self.scale = scale
        self.rand_type = rand_type

    def _init_weight(self, name, arr):
        nout = arr.shape[0]
        nin = int(np.prod(arr.shape[1:]))
        if self.rand_type == "uniform":
            tmp = ndarray.random.uniform(-1.0, 1.0, shape=(nout, nin)).asnumpy()
        elif self.rand_type == "normal":
            tmp = ndarray.random.normal(0.0, 1.0, shape=(nout, nin)).asnumpy()
        else:
            raise ValueError(f"Orthogonal: rand_type must be 'uniform' or 'normal', "
                             f"got {self.rand_type!r}")
        u, _, v = np.linalg.svd(tmp, full_matrices=False)
        res = u if u.shape == tmp.shape else v
        arr[:] = self.scale * res.reshape(arr.shape)


def _fans(name, shape):
    """(fan_in, fan_out) of a weight of ``shape``, as Xavier counts them."""
    if len(shape) < 2:
        raise ValueError(f"Xavier initializer cannot be applied to vector {name}. It requires "
                         f"at least 2D (got shape {shape}).")
    hw_scale = float(np.prod(shape[2:])) if len(shape) > 2 else 1.0
    return shape[1] * hw_scale, shape[0] * hw_scale


@register
class Xavier(Initializer):
    """Xavier/Glorot initialization.

    ``scale = sqrt(magnitude / factor)`` with ``factor`` the mean of fan-in
    and fan-out (``factor_type='avg'``), fan-in (``'in'``) or fan-out
    (``'out'``); the fans count the receptive field (``shape[2:]``).
    ``rnd_type='uniform'`` draws from [-scale, scale), ``'gaussian'`` from
    N(0, scale**2).
    """
    def __init__(self, rnd_type="uniform", factor_type="avg", magnitude=3):
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        self.rnd_type = rnd_type
        self.factor_type = factor_type
        self.magnitude = float(magnitude)

    def _scale(self, name, shape):
        fan_in, fan_out = _fans(name, shape)
        factors = {"avg": (fan_in + fan_out) / 2.0, "in": fan_in, "out": fan_out}
        if self.factor_type not in factors:
            raise ValueError(f"Incorrect factor type {self.factor_type!r} for {name}: "
                             "expected 'avg', 'in' or 'out'")
        return math.sqrt(self.magnitude / factors[self.factor_type])

    def _init_weight(self, name, arr):
        scale = self._scale(name, arr.shape)
        if self.rnd_type == "uniform":
            ndarray.random.uniform(-scale, scale, shape=arr.shape, out=arr)
        elif self.rnd_type == "gaussian":
            ndarray.random.normal(0, scale, shape=arr.shape, out=arr)
        else:
            raise ValueError(f"Unknown random type {self.rnd_type!r} for {name}: expected "
                             "'uniform' or 'gaussian'")


@register
class MSRAPrelu(Xavier):
    """He et al. (2015) initialization for (P)ReLU networks: Gaussian Xavier
    with ``magnitude = 2 / (1 + slope**2)``."""
    def __init__(self, factor_type="avg", slope=0.25):
        super().__init__("gaussian", factor_type, 2.0 / (1 + slope ** 2))
        self._kwargs = {"factor_type": factor_type, "slope": slope}


@register
class Bilinear(Initializer):
    """Initializes weights for bilinear upsampling (Deconvolution) layers."""
    def __init__(self):
        super().__init__()

    def _init_weight(self, _, arr):
        arr[:] = _bilinear_kernel(arr.shape)


@register
class LSTMBias(Initializer):
    """Initializes an LSTM cell's biases to 0 except the forget gate's
    (the second quarter), set to ``forget_bias``."""
    def __init__(self, forget_bias=1.0):
        super().__init__(forget_bias=forget_bias)
        self.forget_bias = forget_bias

    def _init_weight(self, name, arr):
        arr[:] = 0.0
        num_hidden = arr.shape[0] // 4
        arr[num_hidden:2 * num_hidden] = self.forget_bias


from mx._fused_rnn_init import FusedRNN  # noqa: E402  (needs Initializer and create)
register(FusedRNN)
