"""Optimizer states as bytes, without pickle, and a restricted reader for
MXNet 1.9.1's pickled ``.states`` files.

The format ``dumps`` writes (``Updater.get_states``)::

    b"MXOPTST1"                   8 bytes, the magic
    uint64 little-endian          n, the length of the header
    n bytes                       the header, UTF-8 JSON (below)
    the rest                      an ``mx.nd.save`` container (MXNet's .params
                                  format) of the arrays, named "0", "1", ...

The header is ``{"format": "mx.optimizer.states", "version": 1, "states":
[[index, tree], ...], "optimizer": null or {...}}``.  A tree is null, a
number, a string, ``{"nd": "k"}`` (array k of the container, back as an
NDArray), ``{"np": "k"}`` (back as a NumPy array), ``{"tuple": [trees]}``,
``{"list": [trees]}`` or ``{"dict": [[key, tree], ...]}``.  With
``dump_optimizer`` the optimizer is ``mx.optimizer.serialization.to_dict``
plus ``"counts"`` (its update counts per device) and ``"attributes"`` (its
scalar attributes: num_update, Nadam's m_schedule, ...).

``loads`` also reads MXNet's pickles (Updater.get_states of MXNet 1.9.1)
through ``RestrictedUnpickler``: only MXNet NDArrays, NumPy arrays and
scalars, bytearray, and MXNet's optimizer and lr_scheduler classes (rebuilt
as ours from their plain attributes) are admitted; any other global is
refused with ``UnsafeStatesError`` naming it, before anything is called.
"""
import io
import json
import pickle
import struct

import numpy

from mx import ndarray as nd
from mx.base import MXNetError

MAGIC = b"MXOPTST1"
_LEN = struct.Struct("<Q")
FORMAT = "mx.optimizer.states"


class UnsafeStatesError(MXNetError, pickle.UnpicklingError):
    """A pickled states file names a global outside the admitted set."""

    def __init__(self, module, name):
        super().__init__(module, name)
        self.module, self.name = module, name

    def __str__(self):
        return (f"optimizer states: refusing to load the pickled global "
                f"'{self.module}.{self.name}': only NDArrays, NumPy arrays, numbers and "
                f"tuple/list/dict containers (and MXNet's optimizer and lr_scheduler "
                f"classes) are admitted")


class StatesFormatError(MXNetError, ValueError):
    """Bytes that are neither our states format nor an MXNet pickle."""


# --- writing -----------------------------------------------------------------------

def _encode(value, arrays):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, nd.NDArray):
        arrays.append(value)
        return {"nd": str(len(arrays) - 1)}
    if isinstance(value, numpy.ndarray):
        arrays.append(nd.array(value, dtype=value.dtype))
        return {"np": str(len(arrays) - 1)}
    if isinstance(value, numpy.generic):
        return value.item()
    if isinstance(value, tuple):
        return {"tuple": [_encode(v, arrays) for v in value]}
    if isinstance(value, list):
        return {"list": [_encode(v, arrays) for v in value]}
    if isinstance(value, dict):
        return {"dict": [[_key(k), _encode(v, arrays)] for k, v in value.items()]}
    raise TypeError(f"optimizer states: cannot save a {type(value).__name__} "
                    f"(only NDArrays, NumPy arrays, numbers, strings, None and "
                    f"tuple/list/dict of them)")


def _key(key):
    if isinstance(key, (bool, int, float, str)) or key is None:
        return key
    raise TypeError(f"optimizer states: cannot save a key of type {type(key).__name__}")


def _optimizer_record(opt):
    from mx.optimizer.serialization import to_dict
    record = to_dict(opt)
    record["counts"] = [[dev, [[k, v] for k, v in counts.items()]]
                        for dev, counts in opt._all_index_update_counts.items()]
    record["attributes"] = {k: v for k, v in opt.__dict__.items()
                            if isinstance(v, (bool, int, float, str)) and not k.startswith("__")}
    return record


def dumps(states, optimizer=None):
    """``states`` ({index: state}) and, when given, ``optimizer`` as bytes."""
    arrays = []
    tree = [[_key(k), _encode(v, arrays)] for k, v in states.items()]
    header = {"format": FORMAT, "version": 1, "states": tree,
              "optimizer": None if optimizer is None else _optimizer_record(optimizer)}
    raw = json.dumps(header).encode("utf-8")
    buf = io.BytesIO()
    buf.write(MAGIC)
    buf.write(_LEN.pack(len(raw)))
    buf.write(raw)
    _save_container(buf, {str(i): a for i, a in enumerate(arrays)})
    return buf.getvalue()


def _save_container(fo, named):
    # mx.nd.save writes to a path only; its writer takes any file object.
    from mx_ndarray import serialization
    names, arrays, magic = serialization._plan(named, None, "get_states")
    serialization._write(fo, names, arrays, magic)


# --- reading -----------------------------------------------------------------------

def loads(data):
    """(states, optimizer or None) from ``dumps``'s bytes or an MXNet pickle."""
    data = bytes(data)
    if data.startswith(MAGIC):
        return _loads_safe(data)
    if data[:1] == b"\x80":
        return _loads_pickle(data)
    raise StatesFormatError(f"optimizer states: the data starts with {data[:8]!r}, neither "
                            f"the states magic {MAGIC!r} nor a pickle (MXNet's .states)")


def _loads_safe(data):
    at = len(MAGIC)
    if len(data) < at + _LEN.size:
        raise StatesFormatError(f"optimizer states: truncated at byte {len(data)}: the header "
                                f"length needs bytes {at}..{at + _LEN.size}")
    (n,) = _LEN.unpack_from(data, at)
    at += _LEN.size
    if n > len(data) - at:
        raise StatesFormatError(f"optimizer states: the header length {n} at byte {at - 8} "
                                f"runs past the end ({len(data)} bytes)")
    try:
        header = json.loads(data[at:at + n].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise StatesFormatError(f"optimizer states: the header at byte {at} is not JSON: "
                                f"{err}") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise StatesFormatError(f"optimizer states: the header at byte {at} is not a "
                                f"{FORMAT!r} header")
    if header.get("version") != 1:
        raise StatesFormatError(f"optimizer states: unsupported version "
                                f"{header.get('version')!r} (this reader knows 1)")
    arrays = nd.load_frombuffer(data[at + n:]) if len(data) > at + n else {}
    if isinstance(arrays, list):
        arrays = {}
    states = {k: _decode(t, arrays) for k, t in header["states"]}
    record = header.get("optimizer")
    return states, None if record is None else _optimizer_from_record(record)


def _decode(tree, arrays):
    if tree is None or isinstance(tree, (bool, int, float, str)):
        return tree
    if not isinstance(tree, dict) or len(tree) != 1:
        raise StatesFormatError(f"optimizer states: bad state node {tree!r}")
    (kind, value), = tree.items()
    if kind in ("nd", "np"):
        if value not in arrays:
            raise StatesFormatError(f"optimizer states: the header names array {value!r}, "
                                    f"which the container lacks")
        return arrays[value] if kind == "nd" else arrays[value].asnumpy()
    if kind == "tuple":
        return tuple(_decode(v, arrays) for v in value)
    if kind == "list":
        return [_decode(v, arrays) for v in value]
    if kind == "dict":
        return {k: _decode(v, arrays) for k, v in value}
    raise StatesFormatError(f"optimizer states: unknown state node kind {kind!r}")


def _optimizer_from_record(record):
    from mx.optimizer.serialization import from_dict
    record = dict(record)
    counts = record.pop("counts", [])
    attributes = record.pop("attributes", {})
    opt = from_dict(record)
    for key, value in attributes.items():
        if key in opt.__dict__ and not callable(opt.__dict__[key]):
            setattr(opt, key, value)
    opt._all_index_update_counts = {dev: dict(pairs) for dev, pairs in counts} or {0: {}}
    opt._index_update_count = opt._all_index_update_counts.setdefault(0, {})
    return opt


# --- MXNet's pickles ----------------------------------------------------------------

class _Pickled:
    """What a pickle built from an admitted MXNet class: its arguments and
    the state BUILD gave; turned into our object by ``_convert``."""
    target = None

    def __init__(self, *args):
        self.args = args
        self.state = None

    def __setstate__(self, state):
        self.state = state


def _numpy_reconstruct(module):
    def reconstruct(subtype, shape, dtype):
        if subtype is not numpy.ndarray:
            raise UnsafeStatesError(module, f"_reconstruct of {subtype!r}")
        return numpy.ndarray.__new__(numpy.ndarray, shape, dtype)
    return reconstruct


def _numpy_scalar(dtype, data=None):
    if dtype.hasobject:
        raise UnsafeStatesError("numpy", f"scalar of dtype {dtype}")
    return numpy.frombuffer(data, dtype=dtype, count=1)[0]


class RestrictedUnpickler(pickle.Unpickler):
    """Admits MXNet's NDArray, NumPy's array/dtype/scalar reconstructors,
    bytearray, and MXNet's optimizer and lr_scheduler classes; refuses every
    other global before anything is called."""

    _classes = {}

    def find_class(self, module, name):
        if module == "builtins" and name == "bytearray":
            return bytearray
        if module in ("numpy.core.multiarray", "numpy._core.multiarray"):
            if name == "_reconstruct":
                return _numpy_reconstruct(module)
            if name == "scalar":
                return _numpy_scalar
        if module == "numpy" and name in ("ndarray", "dtype"):
            return getattr(numpy, name)
        if (module, name) == ("mxnet.ndarray.ndarray", "NDArray") or \
                module in ("mxnet.optimizer.optimizer", "mxnet.lr_scheduler"):
            if module != "mxnet.ndarray.ndarray" and not _known_mxnet_class(module, name):
                raise UnsafeStatesError(module, name)
            key = (module, name)
            if key not in self._classes:
                self._classes[key] = type(name, (_Pickled,), {"target": key})
            return self._classes[key]
        raise UnsafeStatesError(module, name)


def _known_mxnet_class(module, name):
    from mx import lr_scheduler
    from mx.optimizer.optimizer import Optimizer
    if module == "mxnet.lr_scheduler":
        return name in lr_scheduler.SCHEDULERS
    return name.lower() in Optimizer.opt_registry


def _loads_pickle(data):
    try:
        loaded = RestrictedUnpickler(io.BytesIO(data)).load()
    except UnsafeStatesError:
        raise
    except Exception as err:                           # a corrupt pickle
        raise StatesFormatError(f"optimizer states: cannot read the MXNet pickle: "
                                f"{type(err).__name__}: {err}") from None
    loaded = _convert(loaded)
    if isinstance(loaded, tuple) and len(loaded) == 2 and isinstance(loaded[0], dict):
        return loaded[0], loaded[1]
    if not isinstance(loaded, dict):
        raise StatesFormatError(f"optimizer states: the pickle holds a "
                                f"{type(loaded).__name__}, expected a dict of states")
    return loaded, None


def _convert(value):
    if isinstance(value, _Pickled):
        module, name = value.target
        state = _convert(value.state)
        if module == "mxnet.ndarray.ndarray":
            return _ndarray_from_raw(state)
        return _object_from_mxnet(module, name, state)
    if isinstance(value, numpy.ndarray) and value.dtype.hasobject:
        raise UnsafeStatesError("numpy", "ndarray of dtype object")
    if isinstance(value, tuple):
        return tuple(_convert(v) for v in value)
    if isinstance(value, list):
        return [_convert(v) for v in value]
    if isinstance(value, dict):
        return {_convert(k): _convert(v) for k, v in value.items()}
    return value


def _ndarray_from_raw(state):
    """An NDArray from MXNet's pickled ``{'handle': MXNDArraySaveRawBytes}``:
    one record of the .params format, read with the container's reader."""
    raw = state.get("handle") if isinstance(state, dict) else None
    if raw is None:
        return None
    container = struct.pack("<QQQ", 0x112, 0, 1) + bytes(raw) + _LEN.pack(0)
    return nd.load_frombuffer(container)[0]


def _object_from_mxnet(module, name, state):
    """Our optimizer or scheduler from the attributes MXNet pickled."""
    from mx import lr_scheduler
    from mx._arguments import constructor_parameters
    from mx.optimizer.optimizer import Optimizer
    if not isinstance(state, dict):
        raise StatesFormatError(f"optimizer states: {module}.{name} has no attribute dict")
    klass = (lr_scheduler.SCHEDULERS[name] if module == "mxnet.lr_scheduler"
             else Optimizer.opt_registry[name.lower()])
    obj = klass.__new__(klass)
    obj.__dict__.update(state)
    obj._arguments = {k: state[k] for k in constructor_parameters(klass) if k in state}
    if isinstance(obj, Optimizer):
        obj.param_dict = {}
        obj._index_update_count = obj._all_index_update_counts.setdefault(0, {})
    return obj
