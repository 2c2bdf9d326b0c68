"""The operator registry: one entry per operator, with attributes as nnvm
keeps them.

An entry says everything about an operator: its inputs and outputs, typed
parameters, shape and type inference, compute per device, in-place options,
resource requests, and a slot for its gradient maker.  NDArray (imperative)
and Symbol (graph) calls both resolve here, and ``mx.nd.<op>`` /
``mx.sym.<op>`` are generated from it with the docstrings built below.
"""
import importlib
import importlib.util
import keyword
import textwrap
import threading

from mx_engine.base import MXNetError
from mx_ops.core._limits import ShapeError
from mx_ops.core._params import ParamError
from mx_storage.resource import ResourceRequest

__all__ = ["OpDef", "register", "get", "list_ops", "OperatorNotFound", "ShapeError",
           "TypeInferenceError", "gpu_compute", "computes", "set_compute_ex_runner",
           "run_compute_ex"]


class OperatorNotFound(MXNetError, KeyError):
    """No operator (or no compute for a device) under that name."""

    def __str__(self):
        return self.args[0]


class TypeInferenceError(MXNetError, TypeError):
    """Inputs whose dtypes an operator cannot take."""


class OpDef:
    """A registered operator.

    Parameters
    ----------
    name : str
        MXNet's registered name (stored in -symbol.json).
    arguments : sequence of str
        Input names, in order.  For a variadic operator the one name of its
        list argument (MXNet's ``add_argument("data", "NDArray-or-Symbol[]")``).
    outputs : sequence of str, or callable(params) -> list of str
        Output names, in order; a callable when their number depends on the
        parameters (SliceChannel's num_outputs, nnvm's ``set_num_outputs(fn)``).
    key_var_num_args : str, optional
        Makes the operator variadic: the name of the int parameter that holds
        the number of inputs (MXNet's ``key_var_num_args``, Concat's
        ``num_args``).  Invokers fill it from the inputs when it is not given.
    var_inputs : bool
        Makes the operator variadic with no count parameter: its one list
        argument holds the inputs that ``list_input_names(params)`` names
        (MXNet's Custom, whose CustomOpProp says how many it takes).
    list_input_names : callable(params) -> list of str, optional
        Input names for given parameters (nnvm's FListInputNames).  For a
        variadic operator the default is MXNet's ``arg0, arg1, ...``; for a
        fixed-argument operator it picks a subset of ``arguments`` in their
        order, for inputs that a parameter removes (FullyConnected's bias
        with no_bias=True, LeakyReLU's gamma unless act_type='prelu').
    params : dict of str -> Param
    attr_parser : callable(kwargs) -> dict, optional
        Parses the call's keyword arguments in place of ``params`` (nnvm's
        FAttrParser), for an operator whose parameters are not known in
        advance (Custom hands them to its CustomOpProp); ``params`` then
        only documents.  It gets the arguments as given, or a parsed dict
        again (a node's params), and must accept both.
    infer_shape : callable(params, in_shapes) -> list of out shapes
        Raises ShapeError naming the argument.
    infer_type : callable(params, in_dtypes) -> list of out dtypes
        dtypes are names ('float32', ...).  Raises TypeInferenceError.
    infer_shape_partial : callable(params, in_shapes, out_shapes), optional
        MXNet's FInferShape: fills unknown input and output shapes (None,
        or 0 in a dimension) from the known ones, in both directions
        (FullyConnected's weight from its data).  See
        ``mx_ops.core.partial_infer``, which runs it and whose
        ``set_infer_shape_partial`` sets it after registration.
    infer_type_partial : callable(params, in_dtypes, out_dtypes), optional
        MXNet's FInferType, likewise (``set_infer_type_partial``).
    compute : dict
        Per device kind: 'cpu' -> address of an MXFCompute function (run
        without the GIL), or a Python callable; 'gpu' -> a Python callable
        (see mx_ops.ops.elemwise._elemwise_gpu).  A Python compute is called as
        ``fn(params, inputs, outputs, reqs)`` with NumPy (CuPy) arrays and
        req names; ``params`` also holds '_is_train', '_random_state' for
        a random operator, and '_workspace' (a uint8 NumPy or CuPy array of
        ``workspace(params, in_shapes)`` bytes) for one with TEMP_SPACE.
    compute_ex : dict, optional
        Per device kind: a Python callable on NDArrays, run asynchronously
        off the engine's workers (MXNet's FStatefulComputeEx with
        ExecType::kAsync): ``fn(params, inputs, outputs, reqs)``, on a
        thread that may push operators on the arrays and wait for them.
        mx-ndarray runs it (``set_compute_ex_runner``); it takes precedence
        over ``compute``.
    pack_params : callable(params, in_shapes) -> bytes, optional
        The C parameter block the kernel reads (``MXOpCall.params``); it may
        depend on the input shapes (strides of a gather, say).
    inplace : sequence of (input index, output index)
        Output i may share the memory of input j.
    num_visible_outputs : int or callable(params) -> int, optional
        How many of the outputs a caller sees (MXNet's NumVisibleOutputs):
        the rest are computed for the backward pass (L2Normalization's
        norm, BatchNorm's mean and var without output_mean_var).  NDArray
        calls return the visible ones; ``mx_ops.invoke`` returns all.
    hidden_outputs_for_backward : bool
        The hidden outputs serve only the backward pass (CTCLoss's
        gradient): an NDArray call that autograd does not record gives
        them req 'null', so the kernel skips them.  Leave it False where a
        kernel needs a hidden output to compute a visible one.
    mutate_inputs : sequence of int, or callable(params) -> sequence of int
        Inputs the operator writes in place (nnvm's FMutateInputs): aux
        states such as BatchNorm's moving_mean / moving_var, optimizer
        states.  Invokers order the call after earlier readers of them.
    aux_states : sequence of str
        The names among the inputs that are auxiliary states rather than
        arguments (OperatorProperty::ListAuxiliaryStates); they are among
        the mutated inputs.
    resources : sequence of ResourceRequest kinds
        With RANDOM or PARALLEL_RANDOM, the invokers append an MXRandomState
        to the packed parameters (include/mx_ops/tblob.h).  With TEMP_SPACE
        the call gets ``workspace(params, in_shapes)`` bytes of temporary
        space (``MXOpCall.workspace``).
    workspace : callable(params, in_shapes) -> int, optional
        Bytes of temporary space one call needs; required with TEMP_SPACE.
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
    dynamic_shape : bool
        The output shapes depend on the input values (MXNet's
        boolean_mask): ``infer_shape`` gives 0 for the dimensions the values
        decide, ``compute`` is empty, and the operator runs through
        mx-ndarray's NDArray-level implementation (``mx_ndarray._dynamic``);
        an executor whose graph holds one runs its nodes one by one.
    input_docs : dict of str -> str, optional
        What each input is (MXNet's ``add_argument`` description), for the
        generated functions' docstrings: "Weight matrix, (num_hidden, input
        size)."  Inputs that many operators share (data, lhs, rhs, head
        gradients) and a ``_backward_<op>``'s inputs taken from ``<op>``
        have one by default (``_COMMON_INPUTS``, ``input_doc``).
    """

    def __init__(self, name, *, arguments, outputs=("output",), params=None,
                 key_var_num_args=None, var_inputs=False, list_input_names=None, attr_parser=None,
                 infer_shape, infer_type, compute, compute_ex=None,
                 infer_shape_partial=None, infer_type_partial=None,
                 pack_params=None, inplace=(), resources=(), random_draws=None, gradient=None,
                 differentiable=True, num_visible_outputs=None, hidden_outputs_for_backward=False,
                 mutate_inputs=(), aux_states=(), workspace=None, aliases=(), dynamic_shape=False,
                 namespace="", doc="", input_docs=None):
        self.name = name
        self.arguments = tuple(arguments)
        self.outputs = outputs if callable(outputs) else tuple(outputs)
        self.params = dict(params or {})
        self.key_var_num_args = key_var_num_args
        self.list_input_names = list_input_names
        if (list_input_names is not None and key_var_num_args is None
                and not callable(list_input_names)):
            raise MXNetError(f"{name}: list_input_names must be a callable(params)")
        if key_var_num_args is not None and (len(self.arguments) != 1
                                             or key_var_num_args not in self.params):
            raise MXNetError(f"{name}: a variadic operator has one list argument and a "
                             f"parameter '{key_var_num_args}' for its length")
        self.var_inputs = bool(var_inputs)
        if var_inputs and (len(self.arguments) != 1 or key_var_num_args is not None
                           or not callable(list_input_names)):
            raise MXNetError(f"{name}: var_inputs needs one list argument, no "
                             f"key_var_num_args and a list_input_names(params)")
        self.attr_parser = attr_parser
        self.infer_shape = infer_shape
        self.infer_type = infer_type
        self.infer_shape_partial = infer_shape_partial
        self.infer_type_partial = infer_type_partial
        self.compute = dict(compute)
        self.compute_ex = dict(compute_ex or {})
        # Storage-type inference and sparse kernels (core.stype.set_storage_inference).
        self.infer_storage = None
        self.sparse_compute = {}
        self.sparse_from_dense = False
        self.pack_params = pack_params
        self.inplace = tuple(inplace)
        self.resources = tuple(resources)
        self.random_draws = random_draws
        self.num_visible_outputs = num_visible_outputs
        self.hidden_outputs_for_backward = bool(hidden_outputs_for_backward)
        self.mutate_inputs = mutate_inputs if callable(mutate_inputs) else tuple(mutate_inputs)
        self.aux_states = tuple(aux_states)
        self.workspace = workspace
        if (workspace is None) != (ResourceRequest.TEMP_SPACE not in self.resources):
            raise MXNetError(f"{name}: a TEMP_SPACE resource and a 'workspace' size function "
                             f"go together")
        self.gradient = gradient
        self.differentiable = differentiable
        self.dynamic_shape = bool(dynamic_shape)
        if self.dynamic_shape and (self.compute or self.compute_ex):
            raise MXNetError(f"{name}: a dynamic_shape operator has no compute of its own")
        self.aliases = tuple(aliases)
        self.namespace = namespace
        self.doc = doc
        self.input_docs = dict(input_docs or {})
        unknown = sorted(set(self.input_docs) - set(self.arguments))
        if unknown:
            raise MXNetError(f"{name}: input_docs names {', '.join(unknown)}, which are not "
                             f"among its arguments ({', '.join(self.arguments) or 'none'})")

    @property
    def variadic(self):
        """True when the inputs come as one list (a parameter, or the
        parsed parameters, decide how many)."""
        return self.key_var_num_args is not None or self.var_inputs

    @property
    def optional_inputs(self):
        """True when parameters decide which of ``arguments`` are inputs."""
        return not self.variadic and self.list_input_names is not None

    @property
    def num_inputs(self):
        """The fixed number of inputs, or None when it depends on the
        parameters (use ``input_count(params)``)."""
        return None if self.variadic or self.optional_inputs else len(self.arguments)

    @property
    def num_outputs(self):
        """The fixed number of outputs, or None when it depends on the
        parameters (use ``output_count(params)``)."""
        return None if callable(self.outputs) else len(self.outputs)

    def input_names(self, params):
        """Input names for parsed ``params`` (Concat: arg0, arg1, ...)."""
        if self.list_input_names is not None:
            return list(self.list_input_names(params))
        if not self.variadic:
            return list(self.arguments)
        return [f"arg{i}" for i in range(params[self.key_var_num_args])]

    def output_names(self, params):
        """Output names for parsed ``params`` (SliceChannel: output0, ...)."""
        return list(self.outputs(params) if callable(self.outputs) else self.outputs)

    def visible_output_count(self, params):
        """How many outputs an NDArray call returns."""
        n = self.num_visible_outputs
        if n is None:
            return self.output_count(params)
        return n(params) if callable(n) else n

    def mutated_inputs(self, params):
        """Indices of the inputs this call writes in place."""
        m = self.mutate_inputs
        return tuple(m(params) if callable(m) else m)

    def input_count(self, params):
        if self.key_var_num_args is not None:
            return params[self.key_var_num_args]
        return len(self.input_names(params))

    def output_count(self, params):
        return len(self.output_names(params))

    def parse_call(self, kwargs, nin):
        """Parsed params for a call with ``nin`` inputs: fills a variadic
        operator's count the way MXNet's generated functions do (``concat(a,
        b)`` passes num_args=2) and checks the number of inputs."""
        key = self.key_var_num_args
        if key is not None and key not in kwargs:
            kwargs = dict(kwargs)
            kwargs[key] = nin
        params = self.parse_params(kwargs)
        want = self.input_count(params)
        if nin != want:
            if key is not None:
                raise ParamError(f"{self.name}: argument '{key}' is {want}, but {nin} input(s) "
                                 f"were given")
            raise ParamError(f"{self.name}: takes {want} input(s) "
                             f"({', '.join(self.input_names(params))}), got {nin}")
        return params

    def parse_params(self, kwargs):
        """Checked parameter values, defaults filled in; accepts Python values
        and MXNet's strings.  Unknown or missing arguments are errors."""
        if self.attr_parser is not None:
            return self.attr_parser(dict(kwargs))
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
        if fn is None and self.dynamic_shape:
            raise OperatorNotFound(f"{self.name}: its output shape depends on its inputs' "
                                   f"values; call it through mx.nd or an executor, not a "
                                   f"prepared call")
        if fn is None:
            raise OperatorNotFound(f"no 'compute[{device}]' registered for operator "
                                   f"'{self.name}'")
        return fn

    def call_signature(self):
        """(inputs, params) that generated ``mx.nd`` / ``mx.sym`` functions
        spell out, in order: the input names, or None when inputs come
        positionally (a variadic operator, or one whose inputs only
        ``list_input_names`` names); then the parameters.  A variadic count
        (filled from the inputs) and names Python cannot take as arguments
        are left to ``**kwargs``."""
        reserved = {"name", "attr", "out", "kwargs"}
        positional = (self.variadic or (self.optional_inputs and not self.arguments)
                      or any(keyword.iskeyword(a) or a in reserved for a in self.arguments))
        inputs = None if positional else list(self.arguments)
        params = [p for p in self.params
                  if p != self.key_var_num_args and not keyword.iskeyword(p)
                  and p not in reserved and p not in self.arguments]
        return inputs, params

    def input_doc(self, arg):
        """What input ``arg`` is: the registration's ``input_docs``, else (for
        ``_backward_<op>``) what it is to ``<op>``, else the shared
        description of its name; None when nothing says."""
        text = self.input_docs.get(arg)
        if text is not None:
            return text
        forward = _ops.get(self.name[len("_backward_"):]) if self.name.startswith(
            "_backward_") else None
        if forward is not None and arg in forward.arguments:
            return f"{forward.name}'s input '{arg}': {forward.input_doc(arg) or 'input.'}"
        if forward is None or arg in _COMMON_INPUTS:
            return _COMMON_INPUTS.get(arg)
        # MXNet's backward dependencies: head gradients, the forward's inputs
        # and its outputs (hidden ones too: Dropout's mask, BatchNorm's mean).
        return f"{forward.name}'s output '{arg}', as the forward pass computed it."

    def docstring(self, frontend="ndarray"):
        """numpydoc text generated from the registration, for the
        ``mx.nd`` (frontend 'ndarray') or ``mx.sym`` ('symbol') function."""
        symbol = frontend == "symbol"
        lines = [self.doc.strip() or f"The {self.name} operator.", "", "Parameters",
                 "----------"]
        lines += self._input_lines("Symbol" if symbol else "NDArray", symbol)
        for key, spec in self.params.items():
            lines.append(f"{key} : {spec.describe()}")
            if spec.doc:
                lines.append(f"    {spec.doc}")
        lines += self._symbol_tail() if symbol else self._ndarray_tail()
        if self.aliases:
            lines += ["", "Aliases: " + ", ".join(self.aliases) + "."]
        return "\n".join(lines)

    def _ndarray_tail(self):
        """An mx.nd docstring's out= and name= entries and its Returns."""
        return ["out : NDArray, optional", "    The output array.",
                "name : str, optional",
                "    Accepted and ignored, as in MXNet: an NDArray has no name.", "",
                "Returns", "-------",
                "out : NDArray" + (" or list of NDArray" if self.num_outputs != 1 else "")]

    def _symbol_tail(self):
        """An mx.sym docstring's name= and attr= entries and its Returns."""
        return ["name : str, optional",
                "    The node's name.  Left out, the current mx.name.NameManager makes",
                "    one from the name this function is called by, in lower case, and",
                "    a count (fullyconnected0); mx.name.Prefix prefixes either.",
                "attr : dict of str to str, optional",
                "    Attributes of the node ({'lr_mult': '2'}), added to those of the",
                "    current mx.AttrScope.", "",
                "Returns", "-------", "Symbol",
                "    The node's outputs" + (" (index it for one)." if self.num_outputs != 1
                                             else ".")]

    def _input_lines(self, kind, symbol):
        """The docstring's entries for the inputs."""
        if self.variadic:
            arg = self.arguments[0]
            how = (f"Given positionally ({self.name}(a, b, c)"
                   + (", or as one list)" if symbol else ")"))
            if self.key_var_num_args is not None:
                how += f"; '{self.key_var_num_args}' is filled from their number"
            text = self.input_doc(arg) or "The inputs."
            return [f"{arg} : {kind}[]", _indented(f"{text}  {how}.")]
        lines = []
        for arg in self.arguments:
            text = self.input_doc(arg) or f"Input '{arg}'."
            if symbol:
                text += f"  Left out, it is a new variable named '<name>_{arg}'."
            lines += [f"{arg} : {kind}" + (", optional" if symbol else ""), _indented(text)]
        return lines

    def __repr__(self):
        return f"<OpDef {self.name}>"


def _indented(text):
    """A docstring entry's description: wrapped and indented."""
    return textwrap.fill(text, 75, initial_indent="    ", subsequent_indent="    ")


# What the inputs that many operators share are; an operator's input_docs
# say it for its own.
_HEAD_GRADIENT = "Gradient of the loss with respect to the forward output (head gradient)."
_COMMON_INPUTS = {
    "data": "Input data.",
    "lhs": "First operand.",
    "rhs": "Second operand.",
    "out_grad": _HEAD_GRADIENT,
    "ograd": _HEAD_GRADIENT,
    "output_grad": _HEAD_GRADIENT,
    "in_data": "The forward pass's input data.",
    "out_data": "The forward pass's output.",
}

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


def gpu_compute(module, attr, *args):
    """The 'gpu' compute ``<module>.<attr>`` (module: a dotted path, a
    family's CuPy twin such as ``mx_ops.ops.dot._dot_gpu``; or what ``attr(*args)``
    returns, where args are given), imported with CuPy on its first call so
    that importing mx_ops never imports CuPy; None where CuPy is not
    installed, so that the GPU compute is then not registered."""
    try:
        if importlib.util.find_spec("cupy") is None:
            return None
    except (ImportError, ValueError):   # a blocked or half-imported cupy entry
        return None
    fn = None

    def resolve():
        """The twin's compute function, imported (and built) on first use."""
        nonlocal fn
        if fn is None:
            obj = getattr(importlib.import_module(module), attr)
            found = obj(*args) if args else obj
            if not callable(found):
                raise TypeError(f"gpu compute {module}.{attr}{args or ''} gave "
                                f"{type(found).__name__}, not a function")
            fn = found
        return fn

    def run(params, inputs, outputs, reqs):
        (fn or resolve())(params, inputs, outputs, reqs)

    # tests resolve every twin without a GPU (a factory that returns nothing
    # would otherwise show only on a device)
    run.resolve = resolve
    return run


_compute_ex_runner = None


def set_compute_ex_runner(runner):
    """Installs how ``mx_ops.invoke`` runs a ``compute_ex`` on plain arrays:
    ``runner(fn, params, inputs, outputs, reqs)`` with NumPy (CuPy) arrays,
    returning once the work is done.  mx-ndarray installs it at import,
    since NDArrays live above this layer."""
    global _compute_ex_runner
    _compute_ex_runner = runner


def run_compute_ex(op, device, params, inputs, outputs, reqs):
    """Runs ``op``'s NDArray-level compute now on plain arrays (see
    ``set_compute_ex_runner``)."""
    fn = op.compute_ex.get(device)
    if fn is None:
        raise OperatorNotFound(f"no 'compute_ex[{device}]' registered for operator "
                               f"'{op.name}'")
    if _compute_ex_runner is None:
        raise MXNetError(f"{op.name}: this operator computes on NDArrays, which "
                         f"mx_ndarray provides; import mx_ndarray (or mx) first")
    _compute_ex_runner(fn, params, inputs, outputs, reqs)


def computes(cpu, gpu):
    """An OpDef's compute dict: 'cpu', and 'gpu' where there is one."""
    return {"cpu": cpu} if gpu is None else {"cpu": cpu, "gpu": gpu}
