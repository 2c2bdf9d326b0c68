"""How an OperatorProperty class becomes registry entries (mx_ops.ext.operator):
the forward OpDef, the ``_backward_<name>`` OpDef and the gradient maker
between them, each attribute a function of the call's parameters that asks
the property built from them.

The backward's inputs are the entries declare_backward_dependency lists
(in the order it lists them), then the aux states; its outputs are the
arguments' gradients.  Its shapes come from the in_data among them, else
from an in-place pair (entries that may share memory have one shape),
else from the property's infer_shape given None for the unknown shapes.
"""
import threading

from mx_engine import cpu
from mx_engine.base import MXNetError
from mx_ops.core import registry
from mx_ops.core._op_resources import resources, run_context
from mx_ops.core._params import REQUIRED, Param, ParamError
from mx_ops.core.gradient import set_gradient
from mx_ops.core.node import NodeEntry, make_node
from mx_ops.core.registry import OpDef, ShapeError, TypeInferenceError
from mx_ops.ext import _operator
from mx_ops.ext.operator import (NativeOperator, Operator, OperatorProperty, OperatorPropertyError,
                                 OpContext, ParamStruct)
from mx_storage.resource import ResourceRequest

_RANDOM = (ResourceRequest.RANDOM, ResourceRequest.PARALLEL_RANDOM)
_MAX_PROPS = 1024      # property instances kept per operator (one per parameter set)


def _key(params):
    """A hashable key of a call's parameters (the invokers' '_' entries
    left out), or None where a value is not hashable."""
    items = tuple(sorted((k, v) for k, v in params.items() if not k.startswith("_")))
    try:
        hash(items)
    except TypeError:
        return None
    return items


class _Shapes:
    """What one property says about names and dependencies, checked once."""

    def __init__(self, reg, prop):
        where = f"{reg.name}: {type(prop).__name__}"
        self.args = reg.names(prop.list_arguments(), f"{where}.list_arguments()")
        self.outs = reg.names(prop.list_outputs(), f"{where}.list_outputs()")
        self.aux = reg.names(prop.list_auxiliary_states(), f"{where}.list_auxiliary_states()")
        clash = set(self.args) & set(self.aux)
        if clash:
            raise OperatorPropertyError(f"{where}: names {sorted(clash)} are both arguments "
                                        f"and auxiliary states")
        nout, nargs = len(self.outs), len(self.args)
        self.nvisible = prop.num_visible_outputs()
        if not (isinstance(self.nvisible, int) and 1 <= self.nvisible <= nout):
            raise OperatorPropertyError(f"{where}.num_visible_outputs() must be an int in "
                                        f"[1, {nout}], got {self.nvisible!r}")
        ograd, indata = list(range(nout)), list(range(nout, nout + nargs))
        outdata = list(range(nout + nargs, 2 * nout + nargs))
        self.deps = [reg.id_(d, 2 * nout + nargs, f"{where}.declare_backward_dependency()")
                     for d in prop.declare_backward_dependency(ograd, indata, outdata)]
        if len(set(self.deps)) != len(self.deps):
            raise OperatorPropertyError(f"{where}.declare_backward_dependency() lists an "
                                        f"entry twice: {self.deps}")
        self.fwd_inplace = []
        for pair in prop.forward_inplace_option(indata, list(range(nout))):
            i, j = reg.pair(pair, f"{where}.forward_inplace_option()")
            if not (nout <= i < nout + nargs and 0 <= j < nout):
                raise OperatorPropertyError(f"{where}.forward_inplace_option() pairs {pair}: "
                                            f"want (an in_data id, an out_data index)")
            self.fwd_inplace.append((i - nout, j))
        self.bwd_inplace = []
        for pair in prop.backward_inplace_option(ograd, indata, outdata, list(range(nargs))):
            slot, g = reg.pair(pair, f"{where}.backward_inplace_option()")
            if slot not in self.deps or not 0 <= g < nargs:
                raise OperatorPropertyError(
                    f"{where}.backward_inplace_option() pairs {pair}: want (an id that "
                    f"declare_backward_dependency lists, an in_grad index < {nargs})")
            self.bwd_inplace.append((self.deps.index(slot), g))

    def slot_name(self, slot):
        nout, nargs = len(self.outs), len(self.args)
        if slot < nout:
            return f"{self.outs[slot]}_grad"
        if slot < nout + nargs:
            return self.args[slot - nout]
        return self.outs[slot - nout - nargs]


class _Registration:
    """One registered property class and what it needs at call time."""

    def __init__(self, name, prop_class, aliases, doc):
        self.name = name
        self.backward_name = f"_backward_{name}"
        self.prop_class = prop_class
        self._props = {}
        self._native = {}      # (params key, argument shapes) -> NativeOperator
        self._lock = threading.Lock()
        self.params = dict(prop_class.params)
        probe = self._make(ParamStruct({k: None if p.default is REQUIRED else p.default
                                        for k, p in self.params.items()}))
        try:
            fwd = [ResourceRequest(k) for k in probe.forward_resource(None)]
            bwd = [ResourceRequest(k) for k in probe.backward_resource(None)]
        except (TypeError, ValueError) as exc:
            raise OperatorPropertyError(f"{name}: forward_resource / backward_resource must "
                                        f"return ResourceRequest kinds: {exc}") from None
        self.fwd_resources, self.bwd_resources = tuple(fwd), tuple(bwd)
        info = self.info(probe)
        # The class docstring as one paragraph, like the built-ins' docs.
        self.doc = doc if doc is not None else " ".join((prop_class.__doc__ or "").split())
        self.aliases = tuple(aliases)
        self.probe_info = info

    # --- checks used by _Shapes ---------------------------------------------
    def names(self, value, where):
        if isinstance(value, str) or not all(isinstance(v, str) for v in value):
            raise OperatorPropertyError(f"{where} must return a list of str, got {value!r}")
        value = list(value)
        if len(set(value)) != len(value):
            raise OperatorPropertyError(f"{where} returned a name twice: {value}")
        return value

    @staticmethod
    def id_(value, n, where):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < n:
            raise OperatorPropertyError(f"{where} returned {value!r}, which is none of the "
                                        f"ids it was given (0 .. {n - 1})")
        return value

    @staticmethod
    def pair(value, where):
        try:
            a, b = value
            return int(a), int(b)
        except (TypeError, ValueError):
            raise OperatorPropertyError(f"{where} must return pairs, got {value!r}") from None

    # --- properties per parameter set ---------------------------------------
    def _make(self, param):
        try:
            return self.prop_class(param)
        except Exception as exc:
            raise OperatorPropertyError(f"{self.name}: {self.prop_class.__name__}({param}) "
                                        f"raised {type(exc).__name__}: {exc}") from exc

    def prop(self, params):
        """The property for a call's parsed parameters (cached)."""
        key = _key(params)
        prop = self._props.get(key) if key is not None else None
        if prop is None:
            prop = self._make(ParamStruct({k: v for k, v in params.items()
                                           if not k.startswith("_")}))
            prop._mx_info = _Shapes(self, prop)
            if key is not None:
                with self._lock:
                    if len(self._props) >= _MAX_PROPS:
                        self._props.clear()
                    self._props[key] = prop
        return prop

    def info(self, prop):
        info = getattr(prop, "_mx_info", None)
        if info is None:
            info = prop._mx_info = _Shapes(self, prop)
        return info

    # --- forward inference --------------------------------------------------
    def _infer(self, prop, arg_shapes, aux_given=None):
        """(in, out, aux) from the property, checked against what it names."""
        info = self.info(prop)
        where = f"{self.name}: {type(prop).__name__}.infer_shape"
        res = prop.infer_shape(list(arg_shapes))
        if not (isinstance(res, (tuple, list)) and len(res) == 3):
            raise OperatorPropertyError(f"{where} must return (in_shapes, out_shapes, "
                                        f"aux_shapes), got {res!r}")
        for got, names, what in zip(res, (info.args, info.outs, info.aux),
                                    ("argument", "output", "auxiliary state")):
            if len(got) != len(names):
                raise OperatorPropertyError(f"{where} returned {len(got)} {what} shape(s) for "
                                            f"{len(names)} {what}(s) ({', '.join(names)})")
        ins = [None if s is None else tuple(int(d) for d in s) for s in res[0]]
        outs = [tuple(int(d) for d in s) for s in res[1]]
        aux = [tuple(int(d) for d in s) for s in res[2]]
        for name, given, s in zip(info.args, arg_shapes, ins):
            if given is not None and tuple(given) != s:
                raise ShapeError(f"{self.name}: argument '{name}' has shape {tuple(given)}, but "
                                 f"infer_shape expects {s}")
        for name, given, s in zip(info.aux, aux_given or (), aux):
            if tuple(given) != s:
                raise ShapeError(f"{self.name}: auxiliary state '{name}' has shape "
                                 f"{tuple(given)}, but infer_shape expects {s}")
        return ins, outs, aux

    def infer_shape(self, params, shapes):
        prop = self.prop(params)
        nargs = len(self.info(prop).args)
        return self._infer(prop, [tuple(s) for s in shapes[:nargs]], shapes[nargs:])[1]

    def partial_shape(self, params, ins, outs):
        """The partial inference rule (mx_ops.core.partial_infer): MXNet's
        OperatorProperty::InferShape is partial, so the property gets None
        for the arguments not known yet (and 0 for unknown dimensions), and
        whatever it returns fills arguments, outputs and aux states.  A
        property that cannot work without every shape (it raises something
        other than a shape or parameter error) just infers nothing yet."""
        prop = self.prop(params)
        info = self.info(prop)
        nargs = len(info.args)
        if all(s is not None and 0 not in s for s in ins[:nargs]):
            return ins, outs                    # the forward infer_shape takes it from here
        where = f"{self.name}: {type(prop).__name__}.infer_shape"
        try:
            res = prop.infer_shape(list(ins[:nargs]))
        except (ShapeError, ParamError, OperatorPropertyError):
            raise
        except Exception:
            return ins, outs
        if not (isinstance(res, (tuple, list)) and len(res) == 3
                and [len(r) for r in res] == [nargs, len(outs), len(info.aux)]):
            raise OperatorPropertyError(f"{where} must return (in_shapes, out_shapes, "
                                        f"aux_shapes) with {nargs}, {len(outs)} and "
                                        f"{len(info.aux)} entries, got {res!r}")
        for side, offset, shapes in ((ins, 0, res[0]), (outs, 0, res[1]), (ins, nargs, res[2])):
            for i, s in enumerate(shapes):
                if s is not None:
                    side.assign(offset + i, tuple(int(d) for d in s),
                                why=f"from {type(prop).__name__}.infer_shape")
        return ins, outs

    def _types(self, prop, arg_types, aux_given=()):
        info = self.info(prop)
        where = f"{self.name}: {type(prop).__name__}.infer_type"
        try:
            res = prop.infer_type(list(arg_types))
        except TypeInferenceError as exc:
            raise TypeInferenceError(f"{self.name}: {exc}") from None
        if not (isinstance(res, (tuple, list)) and len(res) == 3):
            raise OperatorPropertyError(f"{where} must return (in_types, out_types, "
                                        f"aux_types), got {res!r}")
        for got, names, what in zip(res, (info.args, info.outs, info.aux),
                                    ("argument", "output", "auxiliary state")):
            if len(got) != len(names):
                raise OperatorPropertyError(f"{where} returned {len(got)} {what} dtype(s) for "
                                            f"{len(names)} {what}(s)")
        for name, given, t in zip(info.args + info.aux, list(arg_types) + list(aux_given),
                                  list(res[0]) + list(res[2])):
            if given is not None and given != t:
                raise TypeInferenceError(f"{self.name}: '{name}' has dtype {given}, but "
                                         f"infer_type expects {t}")
        return list(res[1])

    def infer_type(self, params, dtypes):
        prop = self.prop(params)
        nargs = len(self.info(prop).args)
        return self._types(prop, dtypes[:nargs], dtypes[nargs:])

    # --- backward inference -------------------------------------------------
    def arg_shapes(self, params, shapes):
        """The arguments' shapes of a backward call whose inputs have
        ``shapes`` (the dependencies, then the aux states)."""
        prop = self.prop(params)
        info = self.info(prop)
        nout, nargs, ndeps = len(info.outs), len(info.args), len(info.deps)
        known = {slot: tuple(s) for slot, s in zip(info.deps, shapes)}
        args = [known.get(nout + i) for i in range(nargs)]
        for i, j in info.fwd_inplace:
            if args[i] is None:
                args[i] = known.get(j, known.get(nout + nargs + j))
        for k, g in info.bwd_inplace:
            if args[g] is None:
                args[g] = tuple(shapes[k])
        if None in args:
            try:
                args = self._infer(prop, args)[0]
            except (OperatorPropertyError, ShapeError):
                raise
            except Exception:            # an infer_shape that cannot take None
                pass
        for name, s in zip(info.args, args):
            if s is None:
                raise ShapeError(f"{self.backward_name}: cannot infer the shape of the gradient "
                                 f"of '{name}': declare_backward_dependency omits it, no "
                                 f"in-place pair gives it, and infer_shape does not fill it in")
        outs = self._infer(prop, args, shapes[ndeps:])[1]
        for slot, s in known.items():
            j = slot if slot < nout else slot - nout - nargs
            if slot < nout or slot >= nout + nargs:
                if s != outs[j]:
                    raise ShapeError(f"{self.backward_name}: input '{info.slot_name(slot)}' has "
                                     f"shape {s}, but the forward's output '{info.outs[j]}' has "
                                     f"{outs[j]}")
        return args

    def backward_types(self, params, dtypes):
        prop = self.prop(params)
        info = self.info(prop)
        nout, nargs = len(info.outs), len(info.args)
        known = dict(zip(info.deps, dtypes))
        args = [known.get(nout + i) for i in range(nargs)]
        for i, j in info.fwd_inplace:
            if args[i] is None:
                args[i] = known.get(j, known.get(nout + nargs + j))
        for k, g in info.bwd_inplace:
            if args[g] is None:
                args[g] = dtypes[k]
        fill = next((t for t in args if t is not None), dtypes[0] if dtypes else "float32")
        args = [fill if t is None else t for t in args]
        self._types(prop, args, dtypes[len(info.deps):])
        return args

    # --- resources ----------------------------------------------------------
    def forward_workspace(self, params, shapes):
        prop = self.prop(params)
        return int(prop.forward_workspace(list(shapes[:len(self.info(prop).args)])))

    def backward_workspace(self, params, shapes):
        return int(self.prop(params).backward_workspace(self.arg_shapes(params, shapes)))

    def forward_draws(self, params, shapes):
        prop = self.prop(params)
        return int(prop.forward_random_draws(list(shapes[:len(self.info(prop).args)])))

    def backward_draws(self, params, shapes):
        return int(self.prop(params).backward_random_draws(self.arg_shapes(params, shapes)))

    # --- Python computes ----------------------------------------------------
    def _operator(self, prop, arrays, shapes, dtypes):
        rctx = run_context(arrays)
        op = prop.create_operator(rctx.ctx, shapes, dtypes)
        if not isinstance(op, Operator):
            raise OperatorPropertyError(f"{self.name}: {type(prop).__name__}.create_operator "
                                        f"returned {type(op).__name__}, not an Operator")
        return op, rctx

    def forward_compute(self, params, inputs, outputs, reqs):
        prop = self.prop(params)
        nargs = len(self.info(prop).args)
        args = list(inputs[:nargs])
        op, rctx = self._operator(prop, inputs + outputs, [a.shape for a in args],
                                  [a.dtype.name for a in args])
        draws = (self.forward_draws(params, [a.shape for a in inputs])
                 if set(self.fwd_resources) & set(_RANDOM) else 0)
        ctx = OpContext(params.get("_is_train", False), rctx,
                        resources(self.name, self.fwd_resources, params, draws,
                                  rctx.ctx.device_type == "gpu"))
        op.forward(ctx, args, list(reqs), list(outputs), list(inputs[nargs:]))

    def backward_compute(self, params, inputs, outputs, reqs):
        prop = self.prop(params)
        info = self.info(prop)
        nout, nargs, ndeps = len(info.outs), len(info.args), len(info.deps)
        slots = [None] * (2 * nout + nargs)
        for slot, a in zip(info.deps, inputs[:ndeps]):
            slots[slot] = a
        op, rctx = self._operator(prop, inputs + outputs, [g.shape for g in outputs],
                                  [g.dtype.name for g in outputs])
        draws = (self.backward_draws(params, [a.shape for a in inputs])
                 if set(self.bwd_resources) & set(_RANDOM) else 0)
        ctx = OpContext(params.get("_is_train", False), rctx,
                        resources(self.backward_name, self.bwd_resources, params, draws,
                                  rctx.ctx.device_type == "gpu"))
        op.backward(ctx, slots[:nout], slots[nout:nout + nargs], slots[nout + nargs:],
                    list(reqs), list(outputs), list(inputs[ndeps:]))

    # --- native computes ----------------------------------------------------
    def native_operator(self, params, arg_shapes):
        """The NativeOperator for these parameters and argument shapes,
        created once and kept: the packed call holds only a borrowed
        pointer to it."""
        prop = self.prop(params)
        key = (_key(params), tuple(tuple(s) for s in arg_shapes))
        op = self._native.get(key)
        if op is None:
            op = prop.create_operator(cpu(0), [tuple(s) for s in arg_shapes], None)
            if not isinstance(op, NativeOperator):
                raise OperatorPropertyError(
                    f"{self.name}: {type(prop).__name__}.create_operator returned "
                    f"{type(op).__name__}; a property with native = True returns a "
                    f"NativeOperator")
            if key[0] is None:
                raise OperatorPropertyError(f"{self.name}: a native operator's parameters "
                                            f"must be hashable")
            with self._lock:
                op = self._native.setdefault(key, op)
        return op

    def forward_pack(self, params, shapes):
        prop = self.prop(params)
        info = self.info(prop)
        nargs = len(info.args)
        op = self.native_operator(params, shapes[:nargs])
        return _operator.pack(op, nargs, len(info.aux), len(info.outs), (),
                              bool(set(self.fwd_resources) & set(_RANDOM)))

    def backward_pack(self, params, shapes):
        prop = self.prop(params)
        info = self.info(prop)
        op = self.native_operator(params, self.arg_shapes(params, shapes))
        return _operator.pack(op, len(info.args), len(info.aux), len(info.outs), info.deps,
                              bool(set(self.bwd_resources) & set(_RANDOM)))

    # --- the gradient maker -------------------------------------------------
    def gradient(self, node, ograds):
        info = self.info(self.prop(node.params))
        nout, nargs = len(info.outs), len(info.args)
        entries = []
        for slot in info.deps:
            if slot < nout:
                entries.append(ograds[slot])
            elif slot < nout + nargs:
                entries.append(node.inputs[slot - nout])
            else:
                entries.append(NodeEntry(node, slot - nout - nargs))
        entries += node.inputs[nargs:]
        params = {k: v for k, v in node.params.items() if not k.startswith("_")}
        back = make_node(self.backward_name, entries, name=f"{node.name}_backward", **params)
        return back.outputs() + [None] * len(info.aux)


def _check_class(name, prop_class):
    if not (isinstance(prop_class, type) and issubclass(prop_class, OperatorProperty)):
        raise OperatorPropertyError(f"register_op_property: '{name}' needs an "
                                    f"OperatorProperty subclass, got {prop_class!r}")
    for method in ("infer_shape", "create_operator"):
        if getattr(prop_class, method) is getattr(OperatorProperty, method):
            raise OperatorPropertyError(f"{name}: {prop_class.__name__} does not implement "
                                        f"{method}, which every operator property needs")
    for key, spec in prop_class.params.items():
        if not isinstance(spec, Param):
            raise OperatorPropertyError(f"{name}: {prop_class.__name__}.params['{key}'] must "
                                        f"be a Param, got {spec!r}")
    devices = tuple(prop_class.devices)
    if not devices or set(devices) - {"cpu", "gpu"} or "cpu" not in devices:
        raise OperatorPropertyError(f"{name}: {prop_class.__name__}.devices must be ('cpu',) "
                                    f"or ('cpu', 'gpu'), got {devices!r}")
    if prop_class.native and devices != ("cpu",):
        raise OperatorPropertyError(f"{name}: a native operator runs on the CPU only; set "
                                    f"devices = ('cpu',)")


def _resource_attrs(kinds, workspace, draws):
    attrs = {"resources": kinds}
    if ResourceRequest.TEMP_SPACE in kinds:
        attrs["workspace"] = workspace
    if set(kinds) & set(_RANDOM):
        attrs["random_draws"] = draws
    return attrs


def register(name, prop_class, aliases=(), doc=None):
    _check_class(name, prop_class)
    backward_name = f"_backward_{name}"
    for n in (name, backward_name) + tuple(aliases):
        try:
            registry.get(n)
        except registry.OperatorNotFound:
            continue
        raise MXNetError(f"operator '{n}' is already registered")
    reg = _Registration(name, prop_class, aliases, doc)
    info = reg.probe_info
    if prop_class.native:
        fwd_compute = {"cpu": _operator.forward_address()}
        bwd_compute = {"cpu": _operator.backward_address()}
        fwd_pack, bwd_pack = reg.forward_pack, reg.backward_pack
    else:
        fwd_compute = {d: reg.forward_compute for d in prop_class.devices}
        bwd_compute = {d: reg.backward_compute for d in prop_class.devices}
        fwd_pack = bwd_pack = None

    def naux(p):
        i = reg.info(reg.prop(p))
        return range(len(i.args), len(i.args) + len(i.aux))

    forward = OpDef(
        name, arguments=info.args + info.aux,
        list_input_names=lambda p: reg.info(reg.prop(p)).args + reg.info(reg.prop(p)).aux,
        outputs=lambda p: reg.info(reg.prop(p)).outs,
        num_visible_outputs=lambda p: reg.info(reg.prop(p)).nvisible,
        params=reg.params, infer_shape=reg.infer_shape, infer_type=reg.infer_type,
        infer_shape_partial=reg.partial_shape, compute=fwd_compute, pack_params=fwd_pack, inplace=info.fwd_inplace,
        mutate_inputs=naux, aux_states=info.aux, aliases=reg.aliases,
        doc=reg.doc or f"The {name} operator ({prop_class.__name__}).",
        **_resource_attrs(reg.fwd_resources, reg.forward_workspace, reg.forward_draws))
    backward = OpDef(
        backward_name, arguments=[info.slot_name(s) for s in info.deps] + info.aux,
        list_input_names=lambda p: ([reg.info(reg.prop(p)).slot_name(s)
                                     for s in reg.info(reg.prop(p)).deps]
                                    + reg.info(reg.prop(p)).aux),
        outputs=lambda p: [f"{a}_grad" for a in reg.info(reg.prop(p)).args],
        params=reg.params,
        infer_shape=lambda p, s: [tuple(a) for a in reg.arg_shapes(p, s)],
        infer_type=reg.backward_types, compute=bwd_compute, pack_params=bwd_pack,
        inplace=info.bwd_inplace, differentiable=False,
        doc=f"Gradient of {name}: the inputs are what {prop_class.__name__}."
            f"declare_backward_dependency lists, then the auxiliary states; the outputs are "
            f"the arguments' gradients.",
        **_resource_attrs(reg.bwd_resources, reg.backward_workspace, reg.backward_draws))
    registry.register(forward)
    try:
        registry.register(backward)
    except MXNetError:
        registry._unregister(name)
        raise
    set_gradient(name, reg.gradient)
    forward.op_property = prop_class
    return forward
