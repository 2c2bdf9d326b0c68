"""Custom-operator libraries loaded at run time (MXNet's mx.library.load).

A library is a shared object built against ``mx_ops/lib_api.h`` (in
``mx_ops.get_include()``).  ``load`` opens it, checks its ABI version and
that every operator has its required functions, and registers each one in
the one operator registry, so it is called like a built-in:
``mx.nd.my_gemm(a, b)`` or ``mx_ops.invoke('my_gemm', [a, b])``.

Attributes reach the library as strings (MXNet's convention: ``str`` of
each keyword value), checked by its parseAttrs, which also says how many
inputs and outputs a call has; shapes and dtypes come from its inferShape
and inferType.  The CPU compute is the native trampoline of
``mx_ops.ext._library`` (no GIL on the engine worker), the GPU compute calls the
same trampoline on the worker's stream.  An operator with a backward (or a
stateful one) gets ``_backward_<name>`` and a gradient maker: its inputs are
the output gradients, the forward inputs and the forward outputs, its
outputs the input gradients, as MXNet passes them to the library.

Nothing the library returns is trusted: ``mx_ops.ext._library`` checks every
count, status, name, shape and dtype against lib_abi.h's limits and raises
``LibraryError`` for a value outside them (a crash or a hang in the
library's own code is beyond what a loader can prevent).

A stateful operator's state (its createOpState's CustomStatefulOp) is made
on the first call for a set of attributes, input shapes, dtypes and device,
and kept for the life of the process: later calls with the same ones, and
their backward calls, use it.  Libraries are never unloaded, as in MXNet.
"""
import logging
import os
import threading

from mx_ops.core import registry
from mx_ops.core._params import ParamError
from mx_ops.core.dtypes import DTYPE_FLAGS, DTYPE_NAMES
from mx_ops.core.node import make_node
from mx_ops.core.registry import OpDef, ShapeError, TypeInferenceError
from mx_ops.ext import _library

__all__ = ["load", "LibraryError", "ABI_VERSION"]

ABI_VERSION = _library.ABI_VERSION
# Keys the invokers add to an operator's parameters, not the user's attributes.
_INVOKER_KEYS = ("_is_train", "_random_state")
_log = logging.getLogger("mx.library")
_lock = threading.Lock()
_loaded = {}          # real path -> {"library": Library, "ops": [names]}
# A library that cannot be loaded, or that returned a value lib_abi.h does
# not allow (raised by mx_ops.ext._library too, hence defined there).
LibraryError = _library.LibraryError


def load(path, verbose=True):
    """Loads the custom-operator library at ``path`` and registers its
    operators; returns their names.

    Parameters
    ----------
    path : str or os.PathLike
        A shared library built against ``mx_ops/lib_api.h``.
    verbose : bool
        Log the operators found (logger 'mx.library', level INFO).

    Raises
    ------
    LibraryError
        The file is missing or not a shared library, was built for another
        ABI version, an operator lacks a required function or its name is
        already registered, or the library is already loaded.  Nothing of
        the library is registered then.  Also raised, by loading or by a
        call, for a value the library returns that lib_abi.h does not allow
        (a count, status, name, shape or dtype beyond its limits).
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"mx.library.load: 'path' must be a str or os.PathLike, got "
                        f"{type(path).__name__}")
    path = os.fspath(path)
    if not os.path.exists(path):
        raise LibraryError(f"mx.library.load: library '{path}' does not exist")
    if not os.path.isfile(path):
        raise LibraryError(f"mx.library.load: '{path}' is not a file")
    real = os.path.realpath(path)
    with _lock:
        if real in _loaded:
            raise LibraryError(f"mx.library.load: library '{path}' is already loaded (its "
                               f"operators: {', '.join(_loaded[real]['ops']) or 'none'})")
        try:
            lib = _library.Library(real, path)
        except OSError as exc:
            raise LibraryError(f"mx.library.load: cannot open '{path}' as a shared library: "
                               f"{exc}") from None
        try:
            ops = _register_all(lib, path)
        except BaseException:
            lib.close()
            raise
        _loaded[real] = {"library": lib, "ops": [op.name for op in ops]}
    if verbose:
        _log.info("mx.library.load: loaded '%s': operators %s", path,
                  ", ".join(op.name for op in ops))
    return [op.name for op in ops if not op.name.startswith("_backward_")]


def _check_abi(lib, path):
    version = lib.abi_version()
    if version is None:
        raise LibraryError(f"mx.library.load: '{path}' exports no mxlib_abi_version: it is not "
                           f"an mx custom-operator library (include <mx_ops/lib_api.h> from "
                           f"mx_ops.get_include() in one of its sources)")
    if version != ABI_VERSION:
        raise LibraryError(f"mx.library.load: '{path}' was built for custom-operator ABI "
                           f"version {version}, but this mx-ops speaks version {ABI_VERSION}; "
                           f"rebuild it against mx_ops.get_include()")
    if lib.missing:
        raise LibraryError(f"mx.library.load: '{path}' lacks the entry point(s) "
                           f"{', '.join(lib.missing)} of ABI version {ABI_VERSION}")


def _check_op(info, path):
    name = info["name"]
    where = f"mx.library.load: operator '{name}' of library '{path}'"
    if info["error"]:
        raise LibraryError(f"{where}: {info['error']}")
    for key, fn, setter in (("parse_attrs", "parseAttrs", "setParseAttrs"),
                            ("infer_type", "inferType", "setInferType"),
                            ("infer_shape", "inferShape", "setInferShape")):
        if not info[key]:
            raise LibraryError(f"{where} has no {fn} function ({setter} was not called)")
    forward, stateful = any(info["forward"]), any(info["create_op_state"])
    if not forward and not stateful:
        raise LibraryError(f"{where} has no forward function: call setForward(fn, \"cpu\") "
                           f"(or setCreateOpState for a stateful operator)")
    if forward and stateful:
        raise LibraryError(f"{where} sets both setForward and setCreateOpState; an operator "
                           f"is either stateless or stateful")
    if stateful and any(info["backward"]):
        raise LibraryError(f"{where}: a stateful operator's backward is its state's Backward, "
                           f"not setBackward")


def _register_all(lib, path):
    """Checks every operator of ``lib``, then registers all of them (or,
    on any error, none)."""
    _check_abi(lib, path)
    infos = [lib.op_info(i) for i in range(lib.op_count())]
    seen = set()
    defs = []
    for info in infos:
        _check_op(info, path)
        if info["name"] in seen:
            raise LibraryError(f"mx.library.load: library '{path}' registers operator "
                               f"'{info['name']}' twice")
        seen.add(info["name"])
        core = _LibOp(lib, path, info)
        defs.append(LibraryOpDef(core, backward=False))
        if core.has_backward:
            defs.append(LibraryOpDef(core, backward=True))
    for op in defs:
        try:
            taken = registry.get(op.name)
        except registry.OperatorNotFound:
            continue
        origin = getattr(taken, "library", None)
        raise LibraryError(f"mx.library.load: operator '{op.name}' of library '{path}' is "
                           f"already registered" + (f" (by library '{origin}')" if origin
                                                    else " (a built-in operator)"))
    done = []
    try:
        for op in defs:
            registry.register(op)
            done.append(op)
    except BaseException:
        for op in done:
            registry._unregister(op.name)
        raise
    return defs


class _LibOp:
    """One operator of a library: its functions, and the attribute blocks
    and states its calls use (kept for the life of the process, since
    pushed calls hold their addresses)."""

    def __init__(self, lib, path, info):
        self.lib = lib
        self.path = path
        self.name = info["name"]
        self.info = info
        self.stateful = any(info["create_op_state"])
        self.has_backward = self.stateful or any(info["backward"])
        self._attrs = {}     # attribute items -> (AttrBlock, num_in, num_out)
        self._slots = {}     # (attribute items, forward input shapes, device) -> StateSlot
        self._lock = threading.Lock()
        self.what = {fwd: (f"{'forward' if fwd else 'backward'} of operator '{self.name}' in "
                           f"library '{path}'").encode() for fwd in (True, False)}

    def where(self):
        return f"{self.name} (library '{self.path}')"

    @staticmethod
    def items(params):
        return tuple(sorted((k, v) for k, v in params.items() if k not in _INVOKER_KEYS))

    def parse(self, params):
        """(AttrBlock, num_in, num_out) of parsed parameters (cached: a
        parseAttrs call per distinct attributes)."""
        key = self.items(params)
        hit = self._attrs.get(key)
        if hit is not None:
            return hit
        block = _library.AttrBlock(key)
        try:
            nin, nout = self.lib.parse_attrs(self.name, self.info["parse_attrs"], block)
        except _library.LibraryCallError as exc:
            shown = ", ".join(f"{k}={v!r}" for k, v in key) or "none"
            raise ParamError(f"{self.where()}: parseAttrs rejected the attributes ({shown}): "
                             f"{exc}") from None
        with self._lock:
            return self._attrs.setdefault(key, (block, nin, nout))

    def infer_shape(self, params, in_shapes):
        block, nin, nout = self.parse(params)
        in_shapes = [tuple(int(d) for d in s) for s in in_shapes]
        for i, s in enumerate(in_shapes):
            if len(s) > _library.MAX_DIM or any(d >= 2 ** 32 for d in s):
                raise ShapeError(f"{self.where()}: input {i} has shape {s}; a library takes at "
                                 f"most {_library.MAX_DIM} dimensions below 2**32")
        try:
            out = self.lib.infer_shape(self.name, self.info["infer_shape"], block, in_shapes,
                                       nout)
        except _library.LibraryCallError as exc:
            raise ShapeError(f"{self.where()}: inferShape failed for input shapes "
                             f"{in_shapes}: {exc}") from None
        for i, s in enumerate(out):
            if s is None:
                raise ShapeError(f"{self.where()}: inferShape left the shape of output {i} "
                                 f"unset (input shapes {in_shapes})")
        return out

    def infer_type(self, params, in_dtypes):
        block, nin, nout = self.parse(params)
        try:
            out = self.lib.infer_type(self.name, self.info["infer_type"], block,
                                      [DTYPE_FLAGS[d] for d in in_dtypes], nout)
        except _library.LibraryCallError as exc:
            raise TypeInferenceError(f"{self.where()}: inferType failed for input dtypes "
                                     f"{list(in_dtypes)}: {exc}") from None
        for i, flag in enumerate(out):
            if flag == -1:
                raise TypeInferenceError(f"{self.where()}: inferType left the dtype of output "
                                         f"{i} unset (input dtypes {list(in_dtypes)})")
        return [DTYPE_NAMES[f] for f in out]

    def pack(self, params, in_shapes, device, forward):
        """The packed LibCall for a call on ``device`` (0 cpu, 1 gpu; with
        the GPU's id as ``device_id`` in the state key)."""
        block, nin, nout = self.parse(params)
        kind, dev_id = device
        first = 0 if forward else nout
        slot = None
        if self.stateful:
            fn = self.info["create_op_state"][kind]
            key = (self.items(params), tuple(tuple(s) for s in in_shapes[first:first + nin]),
                   kind, dev_id)
            slot = self._slots.get(key)
            if slot is None:
                with self._lock:
                    slot = self._slots.setdefault(key, _library.StateSlot())
        else:
            fn = self.info["forward" if forward else "backward"][kind]
        return self.lib.pack_call(fn, block, slot, self.what[forward], forward, nin, first)


class LibraryOpDef(OpDef):
    """The registry entry of a library operator (or of its backward)."""

    def __init__(self, core, backward):
        self.core = core
        self.forward = not backward
        self.library = core.path
        info = core.info
        if self.forward:
            has = [bool(info["forward"][d] or info["create_op_state"][d]) for d in (0, 1)]
        else:
            has = [bool(info["backward"][d] or info["create_op_state"][d]) for d in (0, 1)]
        compute = {}
        if has[0]:
            compute["cpu"] = _library.fcompute_address()
        if has[1]:
            compute["gpu"] = self._run_gpu
        name = core.name if self.forward else f"_backward_{core.name}"
        super().__init__(
            name, arguments=(), outputs=self._output_names,
            list_input_names=self._input_names, infer_shape=self._infer_shape,
            infer_type=self._infer_type, compute=compute, pack_params=self._pack_cpu,
            gradient=self._gradient if self.forward and core.has_backward else None,
            doc=(f"Operator '{core.name}' of the custom-operator library '{core.path}'"
                 if self.forward else f"Backward of the library operator '{core.name}'.")
            + (" (stateful)" if core.stateful else "") + ".")

    # -- parameters: any keyword, passed on as MXNet's strings ------------
    def parse_params(self, kwargs):
        out = {}
        for key, value in kwargs.items():
            if not isinstance(key, str):
                raise ParamError(f"{self.name}: attribute names must be str, got {key!r}")
            if key in _INVOKER_KEYS:
                continue
            out[key] = value if isinstance(value, str) else str(value)
        self.core.parse(out)        # parseAttrs checks them now, as MXNet's bind does
        return out

    def _counts(self, params):
        _, nin, nout = self.core.parse(params)
        return nin, nout

    def _input_names(self, params):
        nin, nout = self._counts(params)
        if self.forward:
            return [f"data{i}" for i in range(nin)]
        return ([f"out_grad{i}" for i in range(nout)] + [f"data{i}" for i in range(nin)]
                + [f"output{i}" for i in range(nout)])

    def _output_names(self, params):
        nin, nout = self._counts(params)
        if self.forward:
            return [f"output{i}" for i in range(nout)]
        return [f"data{i}_grad" for i in range(nin)]

    def _forward_inputs(self, params, values):
        """The forward's inputs among a backward call's inputs."""
        nin, nout = self._counts(params)
        return list(values[nout:nout + nin])

    def _infer_shape(self, params, in_shapes):
        if self.forward:
            return self.core.infer_shape(params, in_shapes)
        return [tuple(s) for s in self._forward_inputs(params, in_shapes)]

    def _infer_type(self, params, in_dtypes):
        if self.forward:
            return self.core.infer_type(params, in_dtypes)
        return list(self._forward_inputs(params, in_dtypes))

    # -- computes ----------------------------------------------------------
    def _pack_cpu(self, params, in_shapes):
        return self.core.pack(params, in_shapes, (0, 0), self.forward)

    def _run_gpu(self, params, inputs, outputs, reqs):
        """The GPU compute (CuPy is imported only there)."""
        from mx_ops.ext import _library_gpu
        _library_gpu.run(self.core, self.forward, params, inputs, outputs, reqs)

    def _gradient(self, node, ograds):
        back = make_node(f"_backward_{self.core.name}",
                         list(ograds) + list(node.inputs) + node.outputs(),
                         name=f"{node.name}_backward", **node.params)
        return back.outputs()

    def docstring(self, frontend="ndarray"):
        return (self.doc + "\n\nAttributes are keyword arguments passed to the library's "
                "parseAttrs as strings; inputs are given positionally.")
