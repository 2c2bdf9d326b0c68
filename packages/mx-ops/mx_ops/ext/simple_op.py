"""SimpleOp, the unified operator API of the design notes: an operator of
one or two operands described by its functions and gradients alone.

``register_simple_op(name)`` returns a builder; each setter updates the
operator's entries in the one registry (``name``, and ``_backward_<name>``
once a gradient is set), so it is invoked like a built-in:
``mx_ops.invoke(name, ...)``, ``mx.nd.<name>(...)``, graph nodes and
``check_numeric_gradient``.

Functions are told apart by their operands, gradients by what they read
besides the output gradient (the notes' operator_util.h types):

========================  ===================================================
UnaryFunction             f(src, env, ret, req, ctx)
BinaryFunction            f(lhs, rhs, env, ret, req, ctx)
UnaryGradFunctionT0       g(out_grad, env, in_grad, req, ctx)
UnaryGradFunctionT1       g(out_grad, out_value, env, in_grad, req, ctx)
UnaryGradFunctionT2       g(out_grad, in_data0, env, in_grad, req, ctx)
BinaryGradFunctionT0      g(out_grad, env, lhs_grad, rhs_grad, req_lhs, req_rhs, ctx)
BinaryGradFunctionT1      g(out_grad, out_value, env, lhs_grad, rhs_grad, ...)
BinaryGradFunctionT2      g(out_grad, lhs, rhs, env, lhs_grad, rhs_grad, ...)
========================  ===================================================

Each wraps a Python callable, which gets NumPy arrays (CuPy arrays for
'gpu') and req names and writes ``ret`` / the gradients in place
(``assign(ret, req, value)`` honours req), or, on the CPU, the address of
a C / C++ / Cython function of the matching type in
``include/mx_ops/simple_op.h`` (``mx_ops/ext/_simple_op.pxd`` for Cython),
which then runs on the engine's worker without the GIL.  ``env`` holds
the scalar (``set_enable_scalar``) or the keyword arguments
(``set_enable_kwargs``) and the resources (``set_resource_request``).

Example: the notes' smooth l1 loss (``mx_ops.ops.loss.smooth_l1`` registers it with
native kernels)::

    import numpy as np
    from mx_ops.ext.simple_op import (register_simple_op, assign, UnaryFunction,
                                  UnaryGradFunctionT2, NO_INPLACE, INPLACE_OUT_IN)

    def forward(src, env, ret, req, ctx):
        s2 = env.scalar ** 2
        a = np.abs(src)
        assign(ret, req, np.where(a < 1 / s2, 0.5 * src * src * s2, a - 0.5 / s2))

    def backward(out_grad, in_data0, env, in_grad, req, ctx):
        s2 = env.scalar ** 2
        d = np.where(np.abs(in_data0) < 1 / s2, in_data0 * s2, np.sign(in_data0))
        assign(in_grad, req, out_grad * d)

    (register_simple_op("my_smooth_l1")
     .set_function("cpu", UnaryFunction(forward), NO_INPLACE)
     .set_gradient("cpu", UnaryGradFunctionT2(backward), INPLACE_OUT_IN)
     .set_enable_scalar(True)
     .describe("Calculate Smooth L1 Loss(lhs, scalar)"))

Without ``set_shape_function`` the output has the input's shape (a binary
operator's operands must then agree).  A gradient that reads no input
(T0, T1) gives each input gradient the output gradient's shape, which the
shape function must map to itself.
"""
import math

from mx_ops.core import registry
from mx_ops.core._op_resources import RunContext, assign, resources, run_context
from mx_ops.core._params import Param
from mx_ops.core.gradient import set_gradient
from mx_ops.core.node import make_node
from mx_ops.core.partial_infer import same_shape
from mx_ops.core.registry import OpDef, ShapeError, TypeInferenceError
from mx_ops.ext import _simple_op
from mx_ops.ext._simple_op_kinds import (INPLACE_IN_OUT, INPLACE_LHS_OUT, INPLACE_NAMES,
                                         INPLACE_OUT_IN, INPLACE_OUT_LHS, NO_INPLACE, READS,
                                         BinaryFunction, BinaryGradFunctionT0, BinaryGradFunctionT1,
                                         BinaryGradFunctionT2, EnvArguments, SimpleOpError,
                                         UnaryFunction, UnaryGradFunctionT0, UnaryGradFunctionT1,
                                         UnaryGradFunctionT2, _Function, positional)
from mx_storage.resource import ResourceRequest

__all__ = ["register_simple_op", "SimpleOp", "SimpleOpError", "EnvArguments", "RunContext",
           "assign", "UnaryFunction", "BinaryFunction", "UnaryGradFunctionT0",
           "UnaryGradFunctionT1", "UnaryGradFunctionT2", "BinaryGradFunctionT0",
           "BinaryGradFunctionT1", "BinaryGradFunctionT2", "NO_INPLACE", "INPLACE_IN_OUT",
           "INPLACE_OUT_IN", "INPLACE_LHS_OUT", "INPLACE_OUT_LHS", "ResourceRequest"]

_FORWARD_INPLACE = {False: (NO_INPLACE, INPLACE_IN_OUT), True: (NO_INPLACE, INPLACE_LHS_OUT)}
_GRAD_INPLACE = {False: (NO_INPLACE, INPLACE_OUT_IN), True: (NO_INPLACE, INPLACE_OUT_LHS)}
_RANDOM = (ResourceRequest.RANDOM, ResourceRequest.PARALLEL_RANDOM)
_DEVICES = {"cpu": "cpu", "gpu": "gpu", 1: "cpu", 2: "gpu"}     # DEV::kDevMask

_builders = {}       # name -> SimpleOp


def register_simple_op(name, *, aliases=()):
    """A builder registering SimpleOp ``name``; an error if the name is
    taken."""
    return SimpleOp(name, aliases)


class SimpleOp:
    """The registration of one SimpleOp (MXNET_REGISTER_SIMPLE_OP); every
    setter returns the builder, so calls chain."""

    def __init__(self, name, aliases=()):
        self.name = name
        self.backward_name = f"_backward_{name}"
        self.aliases = tuple(aliases)
        for n in (name, self.backward_name) + self.aliases:
            if n in _builders:
                raise SimpleOpError(f"SimpleOp '{n}' is already registered")
            try:
                registry.get(n)
            except registry.OperatorNotFound:
                continue
            raise SimpleOpError(f"operator '{n}' is already registered")
        self._functions = {}          # device -> _Function
        self._gradients = {}
        self._inplace = NO_INPLACE
        self._grad_inplace = NO_INPLACE
        self._shape_fn = None
        self._scalar = False
        self._kwargs = None           # name -> Param with set_enable_kwargs
        self._resources = ()
        self._workspace = None
        self._draws = None
        self._dtypes = None
        self._doc = ""
        self._registered = ()
        _builders[name] = self

    # --- setters ------------------------------------------------------------
    def set_function(self, dev, fn, inplace=NO_INPLACE):
        """The forward on device ``dev`` ('cpu' or 'gpu'): a UnaryFunction or
        BinaryFunction, or a Python callable (5 positional parameters:
        unary, 6: binary)."""
        dev = self._device(dev)
        if not isinstance(fn, _Function):
            if isinstance(fn, int) or not callable(fn):
                raise SimpleOpError(f"{self.name}: a native function's address must come "
                                    f"wrapped as UnaryFunction(address) or "
                                    f"BinaryFunction(address), got {fn!r}")
            n = positional(fn)
            if n not in (5, 6):
                raise SimpleOpError(f"{self.name}: cannot tell whether {fn!r} is unary (src, "
                                    f"env, ret, req, ctx) or binary (lhs, rhs, env, ret, req, "
                                    f"ctx); wrap it in UnaryFunction or BinaryFunction")
            fn = (UnaryFunction if n == 5 else BinaryFunction)(fn)
        if fn.grad:
            raise SimpleOpError(f"{self.name}: set_function takes a forward function; "
                                f"{type(fn).__name__} belongs to set_gradient")
        self._check_function(dev, fn, self._functions, "set_function")
        allowed = _FORWARD_INPLACE[fn.binary]
        if inplace not in allowed:
            raise SimpleOpError(f"{self.name}: a {'binary' if fn.binary else 'unary'} "
                                f"function's in-place option is one of "
                                f"{', '.join(INPLACE_NAMES[i] for i in allowed)}; got "
                                f"{self._inplace_name(inplace)}")
        self._functions[dev] = fn
        self._inplace = inplace
        return self._commit()

    def set_gradient(self, dev, fn, inplace=NO_INPLACE):
        """The gradient on ``dev``: a Unary/BinaryGradFunctionT0/T1/T2, by
        what it reads besides out_grad (nothing, the output, the inputs)."""
        dev = self._device(dev)
        if not isinstance(fn, _Function) or not fn.grad:
            raise SimpleOpError(f"{self.name}: set_gradient takes a UnaryGradFunctionT0/T1/T2 "
                                f"or BinaryGradFunctionT0/T1/T2 (what it reads decides the "
                                f"backward's inputs), got {fn!r}")
        self._check_function(dev, fn, self._gradients, "set_gradient")
        allowed = _GRAD_INPLACE[fn.binary]
        if inplace not in allowed:
            raise SimpleOpError(f"{self.name}: a {'binary' if fn.binary else 'unary'} "
                                f"gradient's in-place option is one of "
                                f"{', '.join(INPLACE_NAMES[i] for i in allowed)}; got "
                                f"{self._inplace_name(inplace)}")
        self._gradients[dev] = fn
        self._grad_inplace = inplace
        return self._commit()

    def set_shape_function(self, fn):
        """``fn(src_shape, env)`` (unary) or ``fn(lhs_shape, rhs_shape,
        env)`` (binary) -> the output shape; raise ShapeError for shapes the
        operator cannot take."""
        if not callable(fn):
            raise SimpleOpError(f"{self.name}: the shape function must be callable, got {fn!r}")
        n = positional(fn)
        binary = self._binary()
        if n is not None and binary is not None and n != (3 if binary else 2):
            raise SimpleOpError(f"{self.name}: a {'binary' if binary else 'unary'} operator's "
                                f"shape function takes {3 if binary else 2} arguments, "
                                f"{fn!r} takes {n}")
        self._shape_fn = fn
        return self._commit()

    def set_enable_scalar(self, enable=True):
        """Adds the float parameter ``scalar`` (env.scalar)."""
        if enable and self._kwargs is not None:
            raise SimpleOpError(f"{self.name}: scalar and kwargs can't be present at the same "
                                f"time")
        self._scalar = bool(enable)
        return self._commit()

    def set_enable_kwargs(self, enable=True, params=None):
        """Adds keyword arguments, declared as ``params`` (name -> Param):
        env.kwargs has them as strings, env.params parsed."""
        if not enable:
            self._kwargs = None
            return self._commit()
        if self._scalar:
            raise SimpleOpError(f"{self.name}: scalar and kwargs can't be present at the same "
                                f"time")
        if not params or not all(isinstance(p, Param) for p in params.values()):
            raise SimpleOpError(f"{self.name}: set_enable_kwargs needs the keyword arguments "
                                f"declared, params={{name: Param(...)}}")
        if "scalar" in params:
            raise SimpleOpError(f"{self.name}: 'scalar' is set_enable_scalar's parameter")
        self._kwargs = dict(params)
        return self._commit()

    def set_resource_request(self, requests, workspace=None, random_draws=None):
        """Resources for the function and the gradient, in order
        (env.resource): TEMP_SPACE with ``workspace(in_shapes, env)`` ->
        bytes, RANDOM with ``random_draws(in_shapes, env)`` -> numbers one
        call draws (by default one per output element)."""
        kinds = requests if isinstance(requests, (list, tuple)) else [requests]
        try:
            kinds = tuple(ResourceRequest(k) for k in kinds)
        except ValueError:
            raise SimpleOpError(f"{self.name}: resource requests are ResourceRequest values, "
                                f"got {requests!r}") from None
        if (ResourceRequest.TEMP_SPACE in kinds) != (workspace is not None):
            raise SimpleOpError(f"{self.name}: a TEMP_SPACE request and a workspace(in_shapes, "
                                f"env) size function go together")
        if len(set(kinds)) != len(kinds) or len(set(kinds) & set(_RANDOM)) > 1:
            raise SimpleOpError(f"{self.name}: each resource may be requested once, got "
                                f"{[k.name for k in kinds]}")
        self._resources, self._workspace, self._draws = kinds, workspace, random_draws
        return self._commit()

    def set_dtypes(self, dtypes):
        """The dtypes the functions take (all seven by default); others
        fail type inference with a clear error instead of in the kernel."""
        self._dtypes = tuple(dtypes)
        return self._commit()

    def describe(self, doc):
        self._doc = doc
        return self._commit()

    # --- checks -------------------------------------------------------------
    def _device(self, dev):
        d = _DEVICES.get(dev if not hasattr(dev, "device_type") else dev.device_type)
        if d is None:
            raise SimpleOpError(f"{self.name}: device must be 'cpu' or 'gpu', got {dev!r}")
        return d

    @staticmethod
    def _inplace_name(option):
        return INPLACE_NAMES[option] if option in range(5) else repr(option)

    def _binary(self):
        for fn in list(self._functions.values()) + list(self._gradients.values()):
            return fn.binary
        return None

    def _check_function(self, dev, fn, table, setter):
        if fn.native and dev != "cpu":
            raise SimpleOpError(f"{self.name}: a native function runs on the CPU; {setter} "
                                f"for 'gpu' takes a Python callable on CuPy arrays")
        if not fn.native:
            n = positional(fn.fn)
            if n is not None and n != fn.nargs:
                raise SimpleOpError(f"{self.name}: a {type(fn).__name__} takes {fn.nargs} "
                                    f"arguments, {fn.fn!r} takes {n}")
        binary = self._binary()
        if binary is not None and binary != fn.binary:
            raise SimpleOpError(f"{self.name}: {type(fn).__name__} is "
                                f"{'binary' if fn.binary else 'unary'}, but the operator's "
                                f"other functions are {'binary' if binary else 'unary'}")
        others = [g for d, g in table.items() if d != dev]
        if fn.grad and others and others[0].kind != fn.kind:
            raise SimpleOpError(f"{self.name}: every device's gradient must read the same "
                                f"values: {type(others[0]).__name__} and {type(fn).__name__}")
        if self._shape_fn is not None:
            n = positional(self._shape_fn)
            if n is not None and n != (3 if fn.binary else 2):
                raise SimpleOpError(f"{self.name}: the shape function takes {n} arguments; a "
                                    f"{'binary' if fn.binary else 'unary'} operator's takes "
                                    f"{3 if fn.binary else 2}")

    # --- environment --------------------------------------------------------
    def _params(self):
        if self._scalar:
            return {"scalar": Param("float", 1.0, doc="The scalar argument (env.scalar).")}
        return dict(self._kwargs or {})

    def _env(self, params, resource=()):
        if self._scalar:
            return EnvArguments(scalar=params["scalar"], resource=resource)
        kw = {k: params[k] for k in (self._kwargs or {})}
        return EnvArguments(kwargs=[(k, str(v)) for k, v in kw.items()], params=kw,
                            resource=resource)

    def _out_shape(self, params, shapes):
        names = ("lhs", "rhs") if self._binary() else ("data",)
        shapes = [tuple(s) for s in shapes]
        if self._shape_fn is None:
            if len(shapes) == 2 and shapes[0] != shapes[1]:
                raise ShapeError(f"{self.name}: argument 'rhs' has shape {shapes[1]}, which "
                                 f"differs from 'lhs' {shapes[0]}")
            return shapes[0]
        got = self._shape_fn(*shapes, self._env(params))
        try:
            out = tuple(got)
            if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in out):
                raise TypeError
        except TypeError:
            raise SimpleOpError(f"{self.name}: the shape function returned {got!r} for "
                                f"{', '.join(f'{n} {s}' for n, s in zip(names, shapes))}; "
                                f"it must return one shape (a tuple of ints)") from None
        return out

    def _same_types(self, op, names, dtypes):
        for name, t in zip(names[1:], dtypes[1:]):
            if t != dtypes[0]:
                raise TypeInferenceError(f"{op}: argument '{name}' has dtype {t}, which "
                                         f"differs from '{names[0]}' {dtypes[0]}")
        if self._dtypes is not None and dtypes[0] not in self._dtypes:
            raise TypeInferenceError(f"{op}: argument '{names[0]}' has dtype {dtypes[0]}; "
                                     f"supported: {', '.join(self._dtypes)}")
        return dtypes[0]

    def _workspace_fn(self, in_shapes_of):
        if self._workspace is None:
            return None
        return lambda p, s: int(self._workspace(in_shapes_of(p, s), self._env(p)))

    def _draws_fn(self, in_shapes_of, out_sizes):
        if not set(self._resources) & set(_RANDOM):
            return None
        if self._draws is None:
            return out_sizes
        return lambda p, s: int(self._draws(in_shapes_of(p, s), self._env(p)))

    # --- computes -----------------------------------------------------------
    def _compute(self, fn, draws):
        """An OpDef compute for ``fn``: the trampoline's address for a
        native function, else a Python callable."""
        if fn.native:
            return _simple_op.call_address()
        kinds = self._resources
        name = self.name if not fn.grad else self.backward_name

        def run(params, inputs, outputs, reqs):
            rctx = run_context(list(inputs) + list(outputs))
            rctx.is_train = bool(params.get("_is_train", False))
            n = draws(params, [a.shape for a in inputs]) if draws is not None else 0
            env = self._env(params, resources(name, kinds, params, n,
                                              rctx.ctx.device_type == "gpu"))
            fn.fn(*inputs, env, *outputs, *reqs, rctx)
        return run

    def _pack(self, fn):
        if fn is None or not fn.native:
            return None
        has_random = bool(set(self._resources) & set(_RANDOM))

        def pack(params, shapes):
            env = self._env(params)
            return _simple_op.pack(fn.fn, fn.kind, float(env.scalar), env.kwargs, has_random)
        return pack

    # --- registration -------------------------------------------------------
    def _commit(self):
        """(Re)registers the operator from the builder's state, once it has
        a function."""
        if not self._functions:
            return self
        binary = self._binary()
        args = ("lhs", "rhs") if binary else ("data",)
        params = self._params()
        forward = OpDef(
            self.name, arguments=args, params=params,
            infer_shape=lambda p, s: [self._out_shape(p, s)],
            infer_type=lambda p, t: [self._same_types(self.name, args, t)],
            # Without a shape function the output has the inputs' one shape:
            # MXNet's ElemwiseShape, inferred both ways.
            infer_shape_partial=same_shape() if self._shape_fn is None else None,
            compute={d: self._compute(f, self._draws_fn(lambda p, s: s, self._fwd_sizes))
                     for d, f in self._functions.items()},
            pack_params=self._pack(self._functions.get("cpu")),
            inplace=((0, 0),) if self._inplace != NO_INPLACE else (),
            aliases=self.aliases, doc=self._doc or f"The SimpleOp {self.name}.",
            **self._resource_attrs(lambda p, s: s, self._fwd_sizes))
        backward = None
        if self._gradients:
            grad = next(iter(self._gradients.values()))
            ins = ("out_grad",) + READS[grad.kind]
            outs = tuple(f"{a}_grad" for a in args)
            backward = OpDef(
                self.backward_name, arguments=ins, outputs=outs, params=params,
                infer_shape=self._backward_shape,
                infer_type=lambda p, t: [self._same_types(self.backward_name, ins, t)] * len(outs),
                compute={d: self._compute(f, self._draws_fn(self._backward_in_shapes,
                                                            self._bwd_sizes))
                         for d, f in self._gradients.items()},
                pack_params=self._pack(self._gradients.get("cpu")),
                inplace=((0, 0),) if self._grad_inplace != NO_INPLACE else (),
                differentiable=False,
                doc=f"Gradient of {self.name}: (out_grad{''.join(', ' + r for r in ins[1:])}) "
                    f"-> {', '.join(outs)}.",
                **self._resource_attrs(self._backward_in_shapes, self._bwd_sizes))
        for n in self._registered:
            registry._unregister(n)
        registry.register(forward)
        self._registered = (self.name,)
        if backward is not None:
            registry.register(backward)
            self._registered += (self.backward_name,)
            set_gradient(self.name, self._maker(next(iter(self._gradients.values()))))
        return self

    def _resource_attrs(self, in_shapes_of, out_sizes):
        return {"resources": self._resources, "workspace": self._workspace_fn(in_shapes_of),
                "random_draws": self._draws_fn(in_shapes_of, out_sizes)}

    def _fwd_sizes(self, params, shapes):
        return math.prod(self._out_shape(params, shapes))

    def _bwd_sizes(self, params, shapes):
        return sum(math.prod(s) for s in self._backward_shape(params, shapes))

    def _backward_in_shapes(self, params, shapes):
        """The forward's input shapes of a backward call."""
        return self._backward_shape(params, shapes)

    def _backward_shape(self, params, shapes):
        """The input gradients' shapes: the inputs' where the gradient reads
        them, else the output gradient's, which the shape function must
        map to itself."""
        grad = next(iter(self._gradients.values()))
        shapes = [tuple(s) for s in shapes]
        og = shapes[0]
        reads = READS[grad.kind]
        if reads == ("out_value",) and shapes[1] != og:
            raise ShapeError(f"{self.backward_name}: argument 'out_value' has shape "
                             f"{shapes[1]}, which differs from 'out_grad' {og}")
        if reads and reads[0] != "out_value":
            ins = shapes[1:]
            out = self._out_shape(params, ins)
            if out != og:
                raise ShapeError(f"{self.backward_name}: argument 'out_grad' has shape {og}, "
                                 f"but the output of {self.name} on "
                                 f"{', '.join(map(str, ins))} has {out}")
            return ins
        ins = [og] * (2 if grad.binary else 1)
        if self._shape_fn is not None and self._out_shape(params, ins) != og:
            raise ShapeError(f"{self.backward_name}: cannot infer the input shapes from "
                             f"'out_grad' {og}: {type(grad).__name__} reads no input and the "
                             f"shape function does not map {og} to itself")
        return ins

    def _maker(self, grad):
        reads = READS[grad.kind]

        def maker(node, ograds):
            entries = [ograds[0]]
            if reads == ("out_value",):
                entries.append(node.outputs()[0])
            elif reads:
                entries.extend(node.inputs)
            back = make_node(self.backward_name, entries, name=f"{node.name}_backward",
                             **node.params)
            return back.outputs()
        return maker


def _unregister(name):
    """Removes SimpleOp ``name`` and its backward (tests that register
    their own)."""
    op = _builders.pop(name)
    for n in op._registered:
        registry._unregister(n)
