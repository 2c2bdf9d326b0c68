"""The operator registry: one entry per operator, with attributes as nnvm
keeps them.

An entry says everything about an operator: its inputs and outputs, typed
parameters, shape and type inference, compute per device, in-place options,
resource requests, and a slot for its gradient maker.  NDArray (imperative)
and Symbol (graph) calls both resolve here, and ``mx.nd.<op>`` /
``mx.sym.<op>`` are generated from it with the docstrings built below.
"""
import threading

from mx_engine.base import MXNetError
from mx_ops._params import ParamError

__all__ = ["OpDef", "register", "get", "list_ops", "OperatorNotFound", "ShapeError",
           "TypeInferenceError"]


class OperatorNotFound(MXNetError, KeyError):
    """No operator (or no compute for a device) under that name."""

    def __str__(self):
        return self.args[0]


class ShapeError(MXNetError, ValueError):
    """Inputs whose shapes an operator cannot take."""


class TypeInferenceError(MXNetError, TypeError):
    """Inputs whose dtypes an operator cannot take."""


class OpDef:
    """A registered operator.

    Parameters
    ----------
    name : str
        MXNet's registered name (stored in -symbol.json).
    arguments : sequence of str
        Input names, in order.
    outputs : sequence of str
        Output names, in order.
    params : dict of str -> Param
    infer_shape : callable(params, in_shapes) -> list of out shapes
        Raises ShapeError naming the argument.
    infer_type : callable(params, in_dtypes) -> list of out dtypes
        dtypes are names ('float32', ...).  Raises TypeInferenceError.
    compute : dict
        Per device kind: 'cpu' -> address of an MXFCompute function;
        'gpu' -> a Python callable (see mx_ops._elemwise_gpu).
    pack_params : callable(params, in_shapes) -> bytes, optional
        The C parameter block the kernel reads (``MXOpCall.params``); it may
        depend on the input shapes (strides of a gather, say).
    inplace : sequence of (input index, output index)
        Output i may share the memory of input j.
    resources : sequence of ResourceRequest kinds
        With RANDOM or PARALLEL_RANDOM, the invokers append an MXRandomState
        to the packed parameters (include/mx_ops/tblob.h).
    random_draws : callable(params, in_shapes) -> int, optional
        How many counter values of the random stream one call consumes;
        required with a random resource.
    gradient : callable, optional
        The gradient maker: forward node -> list of gradient nodes (the
        operator-library issue fills it); None with ``differentiable=False``
        means the operator has no gradient.
    aliases : sequence of str
    namespace : str
        '' for ``mx.nd``, or e.g. 'contrib' for ``mx.nd.contrib``.
    doc : str
    """

    def __init__(self, name, *, arguments, outputs=("output",), params=None,
                 infer_shape, infer_type, compute, pack_params=None, inplace=(),
                 resources=(), random_draws=None, gradient=None, differentiable=True, aliases=(),
                 namespace="", doc=""):
        self.name = name
        self.arguments = tuple(arguments)
        self.outputs = tuple(outputs)
        self.params = dict(params or {})
        self.infer_shape = infer_shape
        self.infer_type = infer_type
        self.compute = dict(compute)
        self.pack_params = pack_params
        self.inplace = tuple(inplace)
        self.resources = tuple(resources)
        self.random_draws = random_draws
        self.gradient = gradient
        self.differentiable = differentiable
        self.aliases = tuple(aliases)
        self.namespace = namespace
        self.doc = doc

    @property
    def num_inputs(self):
        return len(self.arguments)

    @property
    def num_outputs(self):
        return len(self.outputs)

    def parse_params(self, kwargs):
        """Checked parameter values, defaults filled in; accepts Python values
        and MXNet's strings.  Unknown or missing arguments are errors."""
        out = {}
        for key, value in kwargs.items():
            spec = self.params.get(key)
            if spec is None:
                known = ", ".join(sorted(self.params)) or "none"
                raise ParamError(f"{self.name}: unknown argument '{key}'; its arguments "
                                 f"are: {known}")
            out[key] = spec.parse(self.name, key, value)
        for key, spec in self.params.items():
            if key not in out:
                if spec.required:
                    raise ParamError(f"{self.name}: argument '{key}' is required")
                out[key] = spec.default
        return out

    def compute_for(self, device):
        """The compute function for 'cpu' or 'gpu', or OperatorNotFound."""
        fn = self.compute.get(device)
        if fn is None:
            raise OperatorNotFound(f"no 'compute[{device}]' registered for operator "
                                   f"'{self.name}'")
        return fn

    def docstring(self):
        """numpydoc text generated from the registration."""
        lines = [self.doc.strip() or f"The {self.name} operator.", "", "Parameters",
                 "----------"]
        for arg in self.arguments:
            lines += [f"{arg} : NDArray", "    Input."]
        for key, spec in self.params.items():
            lines.append(f"{key} : {spec.describe()}")
            if spec.doc:
                lines.append(f"    {spec.doc}")
        lines += ["out : NDArray, optional", "    The output array.", "", "Returns",
                  "-------", "out : NDArray" + (" or list of NDArray" if self.num_outputs > 1 else "")]
        if self.aliases:
            lines += ["", "Aliases: " + ", ".join(self.aliases) + "."]
        return "\n".join(lines)

    def __repr__(self):
        return f"<OpDef {self.name}>"


_lock = threading.Lock()
_ops = {}          # every name and alias -> OpDef
_canonical = {}    # registered names only


def register(opdef):
    """Adds an operator; a name or alias already taken is an error."""
    with _lock:
        for name in (opdef.name,) + opdef.aliases:
            if name in _ops:
                raise MXNetError(f"operator '{name}' is already registered")
        for name in (opdef.name,) + opdef.aliases:
            _ops[name] = opdef
        _canonical[opdef.name] = opdef
    return opdef


def _unregister(name):
    """Removes an operator and its aliases (tests that register their own)."""
    with _lock:
        op = _canonical.pop(name)
        for n in (op.name,) + op.aliases:
            _ops.pop(n, None)


def get(name):
    """The operator registered as ``name`` (or an alias of it)."""
    try:
        return _ops[name]
    except KeyError:
        raise OperatorNotFound(f"no operator named '{name}' is registered") from None


def list_ops():
    """Registered operator names (without aliases), sorted."""
    return sorted(_canonical)
