"""``mx.nd.save`` / ``mx.nd.load``: MXNet 1.x's binary NDArray-list format.

Files written here load in MXNet 1.x (``mx.nd.load``) and ``.params`` files
written by MXNet 1.x load here, byte for byte.  No pickle is involved: the
format is fixed-width little-endian integers followed by the raw array bytes.

The layout, as written by MXNet 1.9.1 (``NDArray::Save`` and ``NDArray::Load``
in ``src/ndarray/ndarray.cc``, ``MXNDArraySave`` in ``src/c_api/c_api.cc``,
``Tuple::Save`` in ``include/mxnet/tuple.h``, ``Context::Save`` in
``include/mxnet/base.h``, dmlc-core's ``include/dmlc/serializer.h``)::

    uint64  0x112                    kMXAPINDArrayListMagic
    uint64  0                        reserved
    uint64  N                        number of arrays (std::vector<NDArray>)
    N records:
      uint32  0xF993FAC9             NDARRAY_V2_MAGIC (0xF993FACA = V3: np shape semantics)
      int32   storage type           0 dense, 1 row_sparse, 2 csr
      int32   ndim                   TShape: int32 ndim, then ndim int64 dims
      int64   dims[ndim]
      int32   dev_type, dev_id       Context (1 cpu, 2 gpu, 3 cpu_pinned, 5 cpu_shared)
      int32   type flag              0 float32 1 float64 2 float16 3 uint8 4 int32 5 int8 6 int64
      bytes   data                   prod(dims) * itemsize, C order, little-endian
    A sparse record (stype 1 or 2) has the storage shape (a TShape: rows kept x
    row shape, or (nnz,)) before the shape, after the type flag one int32
    type flag (6, int64) and a TShape per aux array (row_sparse: indices; csr:
    indptr, indices), and the aux arrays' bytes after the data.
    uint64  K                        number of names: 0 (a list) or N (a dict)
    K names: uint64 length, then that many UTF-8 bytes

Older records are read too: ``NDARRAY_V1_MAGIC`` (0xF993FAC8; no storage
type, the same TShape) and the legacy record without a magic, whose first
uint32 is ``ndim``, followed by ``ndim`` uint32 dims (no storage type).

Differences from MXNet, all deliberate:

* ``load`` puts every array on ``cpu(0)`` (or on ``ctx`` when given); MXNet
  puts it back on the context it was saved from when that device exists.
* A record that MXNet reads as an uninitialised NDArray (V1/V2 ``ndim == 0``,
  V3 with an unknown dim of -1) loads as ``None``.  MXNet 1.9.1 itself cannot
  write such a record.
* Legacy records are accepted only with 1 <= ndim <= 32, so that a zeroed or
  corrupt magic is reported instead of being read as an empty array.
* Dims are checked against the size limits (``mx_ops.core._limits``) once the
  dtype is known and before anything is allocated: a zero-size record whose
  other dims times the item size pass int64 is refused at the dims' offset,
  and data is read only when its bytes are left in the file.
* The dtypes this package lacks (bool, int16, uint16, uint32, uint64,
  bfloat16) are reported as unsupported.  Sparse records (row_sparse, csr)
  load as sparse arrays whose format is checked (``check_format``); their
  logical shape may be far larger than the file (only its element count
  must fit int64), so densifying one may fail with a memory error.
* ``save`` writes V2 records, as ``mx.nd.save`` does; an array with
  ``ndim == 0`` cannot be told apart from an uninitialised one in V2, so a
  list holding one is written with V3 records, as ``mx.npx.save`` does.  MXNet
  loads such a file under np shape semantics (``mx.npx.set_np()`` then
  ``mx.npx.load``).  ``np_shape=True`` / ``False`` forces either.
"""
import math
import os
import struct

import numpy as np

from mx_engine import Context, MXNetError, cpu
from mx_ndarray.ndarray import NDArray, array
from mx_ops.core._limits import shape_problem
from mx_ops.core.dtypes import NP_DTYPES, OTHER_FLAGS

__all__ = ["save", "load", "load_frombuffer", "NDArrayFormatError"]

LIST_MAGIC = 0x112
V1_MAGIC = 0xF993FAC8
V2_MAGIC = 0xF993FAC9
V3_MAGIC = 0xF993FACA
MAX_NDIM = 32

# mshadow::TypeFlag (mx_ops.core.dtypes), little-endian in the file.  Flags
# 0-6 are the dtypes of an NDArray here; the others are named so that their
# error says what they are.
_FLAG_DTYPES = {flag: dt.newbyteorder("<") for flag, dt in enumerate(NP_DTYPES)}
_UNSUPPORTED_FLAGS = {flag: name for name, flag in OTHER_FLAGS.items()}
_DTYPE_FLAGS = {dt.newbyteorder("=").name: flag for flag, dt in _FLAG_DTYPES.items()}
_STYPES = {0: "default", 1: "row_sparse", 2: "csr"}
_STYPE_IDS = {name: i for i, name in _STYPES.items()}
_NUM_AUX = {1: 1, 2: 2}         # row_sparse: indices; csr: indptr, indices
_DEV_TYPES = {1: "cpu", 2: "gpu", 3: "cpu_pinned", 5: "cpu_shared"}

_U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")
_U64 = struct.Struct("<Q")
_INT64_MAX = 2**63 - 1


class NDArrayFormatError(MXNetError, ValueError):
    """A file or buffer that is not a valid MXNet NDArray list.

    Attributes
    ----------
    source : str
        The file name, or ``'<buffer>'`` for ``load_frombuffer``.
    offset : int
        The byte offset of the field that is wrong or missing.
    reason : str
        What was expected there and what came.
    """

    def __init__(self, source, offset, reason):
        super().__init__(source, offset, reason)
        self.source = source
        self.offset = offset
        self.reason = reason

    def __str__(self):
        return f"{self.source}: offset {self.offset}: {self.reason}"


# ---------------------------------------------------------------------------
# save

def _records(data, api):
    """(names or None, arrays) from the ``data`` argument, checked as MXNet's
    ``mx.nd.save`` checks it."""
    if isinstance(data, NDArray):
        return None, [data]
    if isinstance(data, dict):
        for k, v in data.items():
            if not isinstance(k, str):
                raise TypeError(f"{api}: the keys of 'data' must be str, got "
                                f"{type(k).__name__} {k!r}")
            if not isinstance(v, NDArray):
                raise TypeError(f"{api}: 'data[{k!r}]' must be an NDArray, got "
                                f"{type(v).__name__}")
            if "\0" in k:
                raise ValueError(f"{api}: the key {k!r} contains a NUL character, which "
                                 f"MXNet's C API would cut the name at")
        return list(data.keys()), list(data.values())
    if isinstance(data, list):
        for i, v in enumerate(data):
            if not isinstance(v, NDArray):
                raise TypeError(f"{api}: 'data[{i}]' must be an NDArray, got "
                                f"{type(v).__name__}")
        return None, list(data)
    raise TypeError(f"{api}: 'data' must be an NDArray, a list of NDArray or a dict of "
                    f"str to NDArray, got {type(data).__name__}")


def _record_head(arr, magic):
    """The bytes of one dense record up to its data, and the data as a
    C-contiguous little-endian NumPy array."""
    host = np.asarray(arr.asnumpy(), order="C")        # keeps 0-d arrays 0-d
    flag = _DTYPE_FLAGS[host.dtype.name]
    host = host.astype(_FLAG_DTYPES[flag], copy=False)
    ctx = arr.context
    head = struct.pack(f"<IiI{host.ndim}qiii", magic, 0, host.ndim, *host.shape,
                       ctx.device_typeid, ctx.device_id, flag)
    return head, host


def _tshape(shape):
    return struct.pack(f"<i{len(shape)}q", len(shape), *shape)


def _sparse_record(arr, magic):
    """The byte parts of one sparse record (MXNet's NDArray::Save): magic,
    stype, storage shape, shape, context, dtype flag, each aux array's
    type flag and shape, then the data and the aux arrays' bytes."""
    data, *aux = (np.ascontiguousarray(c) for c in arr._components())
    flag = _DTYPE_FLAGS[data.dtype.name]
    data = data.astype(_FLAG_DTYPES[flag], copy=False)
    aux = [a.astype(_FLAG_DTYPES[_DTYPE_FLAGS["int64"]], copy=False) for a in aux]
    ctx = arr.context
    parts = [struct.pack("<Ii", magic, _STYPE_IDS[arr.stype]), _tshape(data.shape),
             _tshape(arr.shape), struct.pack("<iii", ctx.device_typeid, ctx.device_id, flag)]
    for a in aux:
        parts += [_I32.pack(_DTYPE_FLAGS["int64"]), _tshape(a.shape)]
    return parts + [memoryview(x).cast("B") for x in [data] + aux if x.size]


def _plan(data, np_shape, api):
    """(names or None, arrays, record magic) for ``data``, checked before any
    file is created."""
    names, arrays = _records(data, api)
    if np_shape is None:
        np_shape = any(a.ndim == 0 for a in arrays)
    elif not np_shape:
        for i, a in enumerate(arrays):
            if a.ndim == 0:
                which = repr(names[i]) if names is not None else str(i)
                raise ValueError(
                    f"{api}: array {which} has ndim 0, which MXNet's legacy shape "
                    f"semantics read as an uninitialised array; save it with "
                    f"np_shape=True (or None) or reshape it to (1,)")
    return names, arrays, V3_MAGIC if np_shape else V2_MAGIC


def _write(fo, names, arrays, magic):
    fo.write(struct.pack("<QQQ", LIST_MAGIC, 0, len(arrays)))
    for a in arrays:
        if a.stype != "default":
            for part in _sparse_record(a, magic):
                fo.write(part)
            continue
        head, host = _record_head(a, magic)
        fo.write(head)
        if host.size:
            fo.write(memoryview(host).cast("B"))
    fo.write(_U64.pack(0 if names is None else len(names)))
    for name in names or ():
        raw = name.encode("utf-8")
        fo.write(_U64.pack(len(raw)))
        fo.write(raw)


def save(fname, data, *, np_shape=None):
    """Saves NDArrays to ``fname`` in MXNet 1.x's binary format.

    Parameters
    ----------
    fname : str or os.PathLike
        The file to write.
    data : NDArray, list of NDArray, or dict of str to NDArray
        What to save.  A dict keeps its names (and their order); ``load``
        then returns a dict.
    np_shape : bool or None, default None
        Write V3 records (NumPy shape semantics, as ``mx.npx.save``) when
        True, V2 records (as ``mx.nd.save``) when False.  None writes V2
        unless an array has ndim 0, which only V3 can express.

    Notes
    -----
    Each array is waited for and copied to the host; the record keeps the
    context the array lives on, as MXNet's does.
    """
    api = "save"
    if not isinstance(fname, (str, os.PathLike)):
        raise TypeError(f"{api}: 'fname' must be a str or os.PathLike, got "
                        f"{type(fname).__name__}")
    names, arrays, magic = _plan(data, np_shape, api)
    with open(fname, "wb") as fo:
        _write(fo, names, arrays, magic)


# ---------------------------------------------------------------------------
# load

class _Reader:
    """Sequential reads of a file or buffer whose size is known, so that every
    size read from it can be checked against what remains before allocating."""

    def __init__(self, source, size, buf=None, fo=None):
        self.source = source
        self.size = size
        self.pos = 0
        self.buf = buf
        self.fo = fo

    def error(self, offset, reason):
        return NDArrayFormatError(self.source, offset, reason)

    @property
    def remaining(self):
        return self.size - self.pos

    def _need(self, n, what):
        if n > self.remaining:
            raise self.error(self.pos, f"expected {what} ({n} bytes), but only "
                                       f"{self.remaining} bytes remain")

    def read(self, n, what):
        self._need(n, what)
        if self.buf is not None:
            raw = self.buf[self.pos:self.pos + n].tobytes()
        else:
            raw = self.fo.read(n)
            if len(raw) != n:
                raise self.error(self.pos, f"expected {what} ({n} bytes), but the file "
                                           f"ended after {len(raw)}")
        self.pos += n
        return raw

    def unpack(self, st, what):
        return st.unpack(self.read(st.size, what))[0]

    def array(self, dtype, shape, what):
        """Reads ``prod(shape)`` elements into a new host array."""
        count = 1
        for d in shape:
            count *= d
        nbytes = count * dtype.itemsize
        self._need(nbytes, what)
        if count == 0:
            out = np.empty(0, dtype=dtype)
        elif self.buf is not None:
            out = np.frombuffer(self.buf, dtype=dtype, count=count, offset=self.pos)
        else:
            out = np.empty(count, dtype=dtype)
            got = self.fo.readinto(memoryview(out).cast("B"))
            if got != nbytes:
                raise self.error(self.pos, f"expected {what} ({nbytes} bytes), but the "
                                           f"file ended after {got}")
        self.pos += nbytes
        return out.reshape(shape)


def _read_count(r, what, min_item):
    at = r.pos
    n = r.unpack(_U64, f"the number of {what} (uint64)")
    if n * min_item > r.remaining:
        raise r.error(at, f"the file declares {n} {what}, but only {r.remaining} bytes "
                          f"remain (each takes at least {min_item})")
    return n


def _read_tshape(r, index):
    """TShape (int32 ndim, then ndim int64 dims) of array ``index``; returns
    (ndim, dims) with ndim possibly negative (checked by the caller)."""
    at = r.pos
    ndim = r.unpack(_I32, f"the ndim of array {index}")
    if ndim > MAX_NDIM:
        raise r.error(at, f"array {index} has ndim {ndim}, more than {MAX_NDIM}")
    if ndim <= 0:
        return ndim, ()
    st = struct.Struct(f"<{ndim}q")
    return ndim, st.unpack(r.read(st.size, f"the {ndim} dims of array {index}"))


def _read_context_and_dtype(r, index):
    """The context (checked, then ignored: arrays load on ``ctx``) and the
    dtype flag of array ``index``: its little-endian NumPy dtype."""
    at = r.pos
    dev_type = r.unpack(_I32, f"the device type of array {index} (int32)")
    if dev_type not in _DEV_TYPES:
        raise r.error(at, f"array {index} has device type {dev_type}, expected one of "
                          f"{sorted(_DEV_TYPES)} (cpu, gpu, cpu_pinned, cpu_shared)")
    r.unpack(_I32, f"the device id of array {index} (int32)")
    at = r.pos
    flag = r.unpack(_I32, f"the dtype flag of array {index} (int32)")
    if flag not in _FLAG_DTYPES:
        if flag in _UNSUPPORTED_FLAGS:
            raise r.error(at, f"array {index} has dtype {_UNSUPPORTED_FLAGS[flag]} (flag "
                              f"{flag}), which is not supported; supported flags are 0-6 "
                              f"(float32, float64, float16, uint8, int32, int8, int64)")
        raise r.error(at, f"array {index} has unknown dtype flag {flag}, expected 0-6")
    return _FLAG_DTYPES[flag]


def _read_dense_tail(r, index, shape, ctx, dims_at):
    """Context, type flag and data of array ``index`` whose dims were at
    byte ``dims_at``: an NDArray on ``ctx``."""
    dtype = _read_context_and_dtype(r, index)
    _check_dims(r, dims_at, index, shape, dtype.itemsize)
    host = r.array(dtype, shape, f"the {dtype.newbyteorder('=').name} data of array "
                                 f"{index} with shape {shape}")
    if not dtype.isnative:
        host = host.astype(dtype.newbyteorder("="))
    return array(host, ctx=ctx, dtype=host.dtype)


def _check_dims(r, at, index, dims, itemsize):
    """Dims (at byte ``at``) that make an array: a zero-size one holds no
    bytes to check against what remains, but its other dims must still
    multiply within int64 bytes, or NumPy refuses to shape it."""
    problem = shape_problem(dims, itemsize)
    if problem is not None:
        raise r.error(at, f"array {index} has shape {dims}: {problem}")


def _read_record(r, index, ctx):
    at = r.pos
    magic = r.unpack(_U32, f"the magic of array {index} (uint32)")
    if magic in (V2_MAGIC, V3_MAGIC):
        at = r.pos
        stype = r.unpack(_I32, f"the storage type of array {index} (int32)")
        if stype not in _STYPES:
            raise r.error(at, f"array {index} has unknown storage type {stype}, expected "
                              f"0 (default), 1 (row_sparse) or 2 (csr)")
        if stype != 0:
            return _read_sparse(r, index, stype, ctx)
        at = r.pos
        ndim, dims = _read_tshape(r, index)
        if magic == V2_MAGIC and ndim == 0:
            return None                      # MXNet: NDArray() and nothing follows
        if ndim < 0:
            raise r.error(at, f"array {index} has ndim {ndim} (an unknown shape), "
                              f"expected 0 to {MAX_NDIM}")
        if magic == V3_MAGIC and -1 in dims:
            return None                      # MXNet: !shape_is_known -> NDArray()
        if any(d < 0 for d in dims):
            raise r.error(at + 4, f"array {index} has a negative dim in {dims}")
        return _read_dense_tail(r, index, dims, ctx, at + 4)
    if magic == V1_MAGIC:
        at = r.pos
        ndim, dims = _read_tshape(r, index)
        if ndim == 0:
            return None                      # V1 writers stopped after a none shape
        if ndim < 0 or any(d < 0 for d in dims):
            raise r.error(at, f"array {index} has an invalid V1 shape: ndim {ndim}, "
                              f"dims {dims}")
        return _read_dense_tail(r, index, dims, ctx, at + 4)
    if 1 <= magic <= MAX_NDIM:               # legacy: no magic, uint32 ndim + dims
        st = struct.Struct(f"<{magic}I")
        dims = st.unpack(r.read(st.size, f"the {magic} legacy uint32 dims of array "
                                         f"{index}"))
        return _read_dense_tail(r, index, dims, ctx, at + 4)
    raise r.error(at, f"expected NDArray magic {V2_MAGIC:#010x} (or {V3_MAGIC:#010x}, "
                      f"{V1_MAGIC:#010x}, or a legacy ndim 1-{MAX_NDIM}) for array "
                      f"{index}, got {magic:#010x}")


def _read_sparse(r, index, stype, ctx):
    """The rest of a sparse record (see _sparse_record) as a sparse array
    on ``ctx``; its components are checked (check_format) once loaded."""
    from mx_ndarray.sparse import csr_matrix, row_sparse_array
    name = _STYPES[stype]
    at = r.pos
    sndim, sdims = _read_tshape(r, index)
    shape_at = r.pos
    ndim, dims = _read_tshape(r, index)
    if ndim == 0:
        return None
    want = 2 if stype == 2 else None
    if ndim < 0 or (want and ndim != want) or any(d < 0 for d in dims):
        raise r.error(shape_at, f"array {index} ({name}) has an invalid shape: ndim {ndim}, "
                                f"dims {dims}")
    if math.prod(dims) > _INT64_MAX:
        raise r.error(shape_at, f"array {index} ({name}) has shape {dims}, whose elements "
                                f"overflow int64")
    if sndim <= 0 or any(d < 0 for d in sdims) or (
            stype == 1 and tuple(sdims[1:]) != tuple(dims[1:])) or (stype == 2 and sndim != 1):
        raise r.error(at, f"array {index} ({name}) has storage shape {sdims}, which does not "
                          f"fit its shape {dims}")
    dtype = _read_context_and_dtype(r, index)
    aux_shapes = []
    for k in range(_NUM_AUX[stype]):
        fat = r.pos
        aflag = r.unpack(_I32, f"the aux type {k} of array {index} (int32)")
        if aflag != _DTYPE_FLAGS["int64"]:
            raise r.error(fat, f"array {index} ({name}) has aux type flag {aflag}; only int64 "
                               f"(6) indices are supported")
        fat = r.pos
        andim, adims = _read_tshape(r, index)
        if andim != 1 or adims[0] < 0:
            raise r.error(fat, f"array {index} ({name}) has aux shape {adims}, expected 1-D")
        aux_shapes.append(adims)
    if stype == 2 and aux_shapes[0][0] != dims[0] + 1:
        raise r.error(at, f"array {index} (csr) has an indptr of {aux_shapes[0][0]} entries for "
                          f"{dims[0]} rows; rows + 1 expected")
    _check_dims(r, at + 4, index, sdims, dtype.itemsize)
    data = r.array(dtype, sdims, f"the data of array {index} with storage shape {sdims}")
    aux = [r.array(_FLAG_DTYPES[_DTYPE_FLAGS["int64"]], s, f"aux array {k} of array {index}")
           for k, s in enumerate(aux_shapes)]
    data = data.astype(dtype.newbyteorder("="), copy=False)
    aux = [a.astype("int64", copy=False) for a in aux]
    try:
        if stype == 2:
            arr = csr_matrix((data, aux[1], aux[0]), shape=dims, ctx=ctx, dtype=data.dtype)
        else:
            arr = row_sparse_array((data, aux[0]), shape=dims, ctx=ctx, dtype=data.dtype)
        arr.check_format(full_check=True)
    except (ValueError, MXNetError) as exc:
        raise r.error(at, f"array {index} ({name}): {exc}") from None
    return arr


def _read_list(r, ctx):
    at = r.pos
    header = r.unpack(_U64, "the NDArray list magic 0x112 (uint64)")
    if header != LIST_MAGIC:
        raise r.error(at, f"expected NDArray list magic {LIST_MAGIC:#x}, got {header:#x}; "
                          f"this is not an MXNet NDArray file")
    r.unpack(_U64, "the reserved field (uint64)")
    n = _read_count(r, "arrays", 8)          # a V1 none record: magic, ndim 0
    arrays = [_read_record(r, i, ctx) for i in range(n)]
    at = r.pos
    k = _read_count(r, "names", 8)
    if k not in (0, n):
        raise r.error(at, f"the file has {n} arrays but {k} names, expected 0 or {n}")
    names = []
    for i in range(k):
        at = r.pos
        length = r.unpack(_U64, f"the length of name {i} (uint64)")
        raw = r.read(length, f"name {i}") if length else b""
        try:
            names.append(raw.decode("utf-8"))
        except UnicodeDecodeError as e:
            raise r.error(at + 8, f"name {i} is not UTF-8: {e}") from None
    # MXNet ignores any bytes after the names; so do we.
    if k == 0:
        return arrays
    return dict(zip(names, arrays))


def _check_ctx(ctx, api):
    if ctx is None:
        return cpu(0)
    if not isinstance(ctx, Context):
        raise TypeError(f"{api}: argument 'ctx' must be a Context such as cpu(0), got "
                        f"{type(ctx).__name__}")
    return ctx


def load(fname, ctx=None):
    """Loads NDArrays saved by ``save`` or by MXNet 1.x's ``mx.nd.save``.

    Parameters
    ----------
    fname : str or os.PathLike
        The file to read.
    ctx : Context, optional
        Where to put the arrays; ``cpu(0)`` by default, whatever context the
        file recorded (MXNet restores the recorded one).

    Returns
    -------
    list of NDArray, or dict of str to NDArray
        A dict when the file holds names, else a list.

    Raises
    ------
    NDArrayFormatError
        (an ``MXNetError`` and a ``ValueError``) naming the file, the byte
        offset and what was expected there, for a truncated or corrupt file,
        a sparse array or an unsupported dtype.
    """
    api = "load"
    if not isinstance(fname, (str, os.PathLike)):
        raise TypeError(f"{api}: 'fname' must be a str or os.PathLike, got "
                        f"{type(fname).__name__}")
    ctx = _check_ctx(ctx, api)
    with open(fname, "rb") as fo:
        size = os.fstat(fo.fileno()).st_size
        return _read_list(_Reader(os.fspath(fname), size, fo=fo), ctx)


def load_frombuffer(buf, ctx=None):
    """Loads NDArrays from the bytes of a file, as MXNet's
    ``mx.nd.load_frombuffer``.  ``buf`` is any bytes-like object; errors name
    the source ``<buffer>``.  See ``load``."""
    api = "load_frombuffer"
    try:
        view = memoryview(buf).cast("B")
    except TypeError:
        raise TypeError(f"{api}: 'buf' must be a C-contiguous bytes-like object, got "
                        f"{type(buf).__name__}") from None
    ctx = _check_ctx(ctx, api)
    return _read_list(_Reader("<buffer>", view.nbytes, buf=view), ctx)
