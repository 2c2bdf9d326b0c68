"""Opening custom-operator libraries and calling into them (mx.library.load).

Two halves.  ``Library`` opens a shared object (dlopen) and calls its
entry points for the loader and for inference: parseAttrs, inferShape and
inferType run from Python, before a call is pushed.  ``lib_fcompute`` is the
MXFCompute trampoline that the engine runs with no GIL: from the packed
parameters (``pack_call``) it takes the library's entry point, the
operator's function and attribute block, turns the MXOpCall's TBlobs into
the library's MXLibTensors and calls forward or backward (or the stateful
operator's Forward/Backward).  Only lib_abi.h's C types cross the boundary.

Nothing a library returns is trusted: every count, status, string, shape
and dtype is checked against lib_abi.h's limits before it sizes a buffer,
bounds a loop or reaches a message, and a value outside them raises
``LibraryError`` (in the trampoline: the call's error text) naming the
library, the operator, the function, the value and the limit.
"""
from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport calloc, free, malloc
from libc.stdio cimport snprintf
from libc.string cimport memset
from libcpp.mutex cimport mutex
from cpython.exc cimport PyErr_Clear
from posix.dlfcn cimport dlclose, dlerror, dlopen, dlsym, RTLD_LOCAL, RTLD_NOW

from mx_engine._context cimport DEV_CPU, DEV_GPU
from mx_ops.core._types cimport MXFCompute, MXOpCall, MXTBlob, MX_MAX_DIM, MX_REQ_ADD, MX_REQ_NULL
from mx_storage._storage cimport StorageHandle, storage_alloc, storage_free

from mx_engine.base import MXNetError

cdef extern from "<string.h>" nogil:
    size_t strnlen(const char* s, size_t maxlen)

cdef extern from "mx_ops/lib_abi.h" nogil:
    enum:
        MX_LIB_ABI_VERSION
        MX_LIB_MAX_DIM
        MX_LIB_MAX_OPS
        MX_LIB_MAX_NAME
        MX_LIB_MAX_MESSAGE
        MX_LIB_MAX_INPUTS
        MX_LIB_MAX_OUTPUTS
        MX_LIB_NUM_DTYPES
        MX_LIB_FAIL
        MX_LIB_SUCCESS
    const int64_t MX_LIB_MAX_EXTENT
    const int64_t MX_LIB_MAX_ELEMENTS
    ctypedef struct MXLibTensor:
        void* data
        const int64_t* shape
        int32_t ndim
        int32_t dtype
        int32_t dev_type
        int32_t dev_id
    ctypedef struct MXLibAttrs:
        int32_t num
        int32_t reserved
        const char* const* keys
        const char* const* vals
    ctypedef void* (*mx_lib_alloc_t)(void* alloc_ctx, int64_t size) noexcept nogil
    ctypedef struct MXLibResource:
        mx_lib_alloc_t alloc_cpu
        mx_lib_alloc_t alloc_gpu
        void* alloc_ctx
        void* stream
        int32_t is_train
        int32_t reserved
    ctypedef struct MXLibOpInfo:
        const char* name
        const char* error
        void* parse_attrs
        void* infer_type
        void* infer_shape
        void* forward[2]
        void* backward[2]
        void* create_op_state[2]
    ctypedef int (*mxlib_abi_version_t)() noexcept nogil
    ctypedef int (*mxlib_op_count_t)() noexcept nogil
    ctypedef int (*mxlib_op_info_t)(int index, MXLibOpInfo* info) noexcept nogil
    ctypedef int (*mxlib_parse_attrs_t)(void* fn, const MXLibAttrs* attrs, int32_t* num_in,
                                        int32_t* num_out, char* err,
                                        int32_t err_size) noexcept nogil
    ctypedef int (*mxlib_infer_shape_t)(void* fn, const MXLibAttrs* attrs, int32_t num_in,
                                        const int32_t* in_ndim, const int64_t* in_shape,
                                        int32_t num_out, int32_t* out_ndim, int64_t* out_shape,
                                        char* err, int32_t err_size) noexcept nogil
    ctypedef int (*mxlib_infer_type_t)(void* fn, const MXLibAttrs* attrs, int32_t num_in,
                                       const int32_t* in_types, int32_t num_out,
                                       int32_t* out_types, char* err,
                                       int32_t err_size) noexcept nogil
    ctypedef int (*mxlib_compute_t)(void* fn, const MXLibAttrs* attrs, const MXLibTensor* inputs,
                                    int32_t num_in, const MXLibTensor* outputs, int32_t num_out,
                                    const MXLibResource* res, char* err,
                                    int32_t err_size) noexcept nogil
    ctypedef int (*mxlib_create_state_t)(void* fn, const MXLibAttrs* attrs, int32_t dev_type,
                                         int32_t dev_id, int32_t num_in, const int32_t* in_ndim,
                                         const int64_t* in_shape, const int32_t* in_types,
                                         void** state, char* err,
                                         int32_t err_size) noexcept nogil
    ctypedef int (*mxlib_state_compute_t)(void* state, int32_t is_forward,
                                          const MXLibTensor* inputs, int32_t num_in,
                                          const MXLibTensor* outputs, int32_t num_out,
                                          const MXLibResource* res, char* err,
                                          int32_t err_size) noexcept nogil

cdef extern from "library_call.h" namespace "mxop" nogil:
    cdef cppclass LibStateSlot:
        mutex mu
    cdef struct LibCall:
        mxlib_compute_t compute
        mxlib_state_compute_t state_compute
        mxlib_create_state_t create_state
        void* fn
        const MXLibAttrs* attrs
        LibStateSlot* slot
        const char* what
        int32_t is_forward
        int32_t fwd_nin
        int32_t fwd_first
        int32_t reserved
    LibStateSlot* lib_slot_new() except +
    void* lib_state_locked(const LibCall* p, const MXLibTensor* inputs, char* err,
                           int32_t err_size)
    int lib_status(int rc, const char* function, char* err, int32_t err_size)
    const char* lib_set_error(const char* what, const char* why)
    int lib_accumulate(void* dst, const void* src, int32_t dtype, int64_t n)
    int64_t mx_dtype_size(int32_t dtype)

ABI_VERSION = MX_LIB_ABI_VERSION
MAX_DIM = MX_LIB_MAX_DIM
MAX_OPS = MX_LIB_MAX_OPS
MAX_NAME = MX_LIB_MAX_NAME
MAX_INPUTS = MX_LIB_MAX_INPUTS
MAX_OUTPUTS = MX_LIB_MAX_OUTPUTS
MAX_EXTENT = MX_LIB_MAX_EXTENT
MAX_ELEMENTS = MX_LIB_MAX_ELEMENTS
NUM_DTYPES = MX_LIB_NUM_DTYPES

# The entry points every library exports (lib_abi.h), in the order they are
# looked up.
ENTRY_POINTS = ("mxlib_abi_version", "mxlib_op_count", "mxlib_op_info", "mxlib_parse_attrs",
                "mxlib_infer_shape", "mxlib_infer_type", "mxlib_compute",
                "mxlib_create_state", "mxlib_state_compute", "mxlib_destroy_state")

DEF ERR_SIZE = 512
# Temporary blocks one call may take (OpResource::alloc_cpu/alloc_gpu and
# the scratch outputs of req 'add'/'null'); more is a library bug.
DEF MAX_ALLOCS = 64


class LibraryError(MXNetError, OSError):
    """A custom-operator library that cannot be loaded, or that returned a
    value lib_abi.h does not allow: names the library and, where one is at
    fault, the operator, the function, the value and the limit."""


class LibraryCallError(MXNetError):
    """A library function that returned MX_FAIL (or threw); the text is the
    library's own message."""


cdef str _text(const char* s, size_t limit):
    """The library's string ``s``, read up to its NUL but never past
    ``limit`` bytes, so no byte beyond a buffer reaches a message."""
    cdef size_t n = strnlen(s, limit)
    return s[:n].decode(errors="replace")


cdef class AttrBlock:
    """The attributes of one operator application as an MXLibAttrs.  Its
    address travels in packed calls, so blocks are kept by the operator's
    cache for as long as the process lives."""
    cdef MXLibAttrs attrs
    cdef list keep
    cdef const char** keys
    cdef const char** vals

    def __cinit__(self, items):
        items = list(items)
        cdef int n = len(items), i
        self.keep = []
        self.keys = <const char**>calloc(n + 1, sizeof(char*))
        self.vals = <const char**>calloc(n + 1, sizeof(char*))
        if self.keys == NULL or self.vals == NULL:
            raise MemoryError("mx.library: cannot allocate an attribute block")
        for i, (k, v) in enumerate(items):
            kb, vb = k.encode(), v.encode()
            self.keep += [kb, vb]
            self.keys[i] = kb
            self.vals[i] = vb
        self.attrs.num = n
        self.attrs.keys = self.keys
        self.attrs.vals = self.vals

    def __dealloc__(self):
        free(self.keys)
        free(self.vals)


cdef class StateSlot:
    """The states of a stateful operator for one set of attributes, input
    shapes and device.  Never freed: pushed calls hold its address and a
    state lives as long as the library (which is never unloaded)."""
    cdef LibStateSlot* slot

    def __cinit__(self):
        self.slot = lib_slot_new()


cdef class Library:
    """An opened custom-operator library.  ``path`` is the name messages
    give it (the path passed to mx.library.load)."""
    cdef void* handle
    cdef readonly str path
    cdef readonly list missing          # entry points it does not export
    cdef void* entries[10]

    def __cinit__(self, str real, str path=None):
        cdef bytes p = real.encode()
        cdef const char* why
        self.path = real if path is None else path
        # RTLD_NOW: an unresolved symbol fails here, not in a worker later.
        self.handle = dlopen(p, RTLD_NOW | RTLD_LOCAL)
        if self.handle == NULL:
            why = dlerror()
            raise OSError(why.decode(errors="replace") if why != NULL else "dlopen failed")
        self.missing = []
        for i, name in enumerate(ENTRY_POINTS):
            self.entries[i] = dlsym(self.handle, name.encode())
            if self.entries[i] == NULL:
                self.missing.append(name)

    def close(self):
        """Unmaps a library none of whose operators were registered."""
        if self.handle != NULL:
            dlclose(self.handle)
            self.handle = NULL

    # -- checks of what the library returned ------------------------------
    cdef _bad(self, op, str function, str what):
        """The LibraryError for a value of ``function`` that lib_abi.h does
        not allow (``what`` says which, and the limit)."""
        where = f"library '{self.path}'" + (f", operator '{op}'" if op else "")
        return LibraryError(f"mx.library: {where}: {function} {what}")

    cdef int _status(self, int rc, op, str function, const char* err) except -1:
        """1 for MX_SUCCESS.  MX_FAIL raises LibraryCallError with the
        library's message; any other status is a LibraryError."""
        if rc == MX_LIB_SUCCESS:
            return 1
        if rc == MX_LIB_FAIL:
            raise LibraryCallError(_text(err, ERR_SIZE - 1) or f"{function} failed with no message")
        raise self._bad(op, function, f"returned status {rc}; the ABI allows {MX_LIB_FAIL} "
                                      f"(MX_FAIL) or {MX_LIB_SUCCESS} (MX_SUCCESS)")

    cdef str _op_name(self, const char* name, str function):
        if name == NULL:
            raise self._bad(None, function, "gave a NULL operator name")
        cdef size_t n = strnlen(name, MX_LIB_MAX_NAME + 1)
        if n > MX_LIB_MAX_NAME:
            # Not shown: it may run on into whatever follows it in memory.
            raise self._bad(None, function, f"gave an operator name with no NUL in its first "
                                            f"{MX_LIB_MAX_NAME} bytes; names are at most "
                                            f"{MX_LIB_MAX_NAME} bytes (MX_LIB_MAX_NAME)")
        text = name[:n].decode(errors="replace")
        if not text.isidentifier():
            raise self._bad(None, function, f"gave the operator name {text!r}, which is not an "
                                            f"identifier")
        return text

    cdef tuple _shape(self, str op, int i, int32_t ndim, const int64_t* dims):
        """Output ``i``'s shape from inferShape's ndim and extents, or None
        for -1 (unset)."""
        cdef int j
        if ndim == -1:
            return None
        if not 1 <= ndim <= MX_LIB_MAX_DIM:
            raise self._bad(op, "inferShape", f"gave output {i} out_ndim={ndim}; the limit is 1 "
                                              f"to {MX_LIB_MAX_DIM} (MX_LIB_MAX_DIM), or -1 for "
                                              f"unset")
        for j in range(ndim):
            if not 0 <= dims[j] <= MX_LIB_MAX_EXTENT:
                raise self._bad(op, "inferShape", f"gave output {i} the extent {dims[j]} in "
                                                  f"dimension {j}; the limit is 0 to "
                                                  f"{MX_LIB_MAX_EXTENT} (MX_LIB_MAX_EXTENT)")
        shape = tuple([dims[j] for j in range(ndim)])
        n = 1
        for d in shape:
            n *= d or 1
        if n > MX_LIB_MAX_ELEMENTS:
            raise self._bad(op, "inferShape", f"gave output {i} the shape {shape}, of {n} "
                                              f"elements; the limit is {MX_LIB_MAX_ELEMENTS} "
                                              f"(MX_LIB_MAX_ELEMENTS)")
        return shape

    # -- the entry points ---------------------------------------------------
    def abi_version(self):
        """The ABI version the library was built for, or None."""
        if self.entries[0] == NULL:
            return None
        return (<mxlib_abi_version_t>self.entries[0])()

    def op_count(self):
        """How many operators the library registers (0 to MAX_OPS)."""
        cdef int n = (<mxlib_op_count_t>self.entries[1])()
        if not 0 <= n <= MX_LIB_MAX_OPS:
            raise self._bad(None, "mxlib_op_count", f"returned {n}; the limit is 0 to "
                                                    f"{MX_LIB_MAX_OPS} (MX_LIB_MAX_OPS)")
        return n

    def op_info(self, int index):
        """The registration of operator ``index`` (below ``op_count()``): its
        name, a registration error (or None) and the function handles (0
        where unset)."""
        cdef MXLibOpInfo info
        cdef str function = f"mxlib_op_info({index})"
        cdef int rc
        memset(&info, 0, sizeof(MXLibOpInfo))
        rc = (<mxlib_op_info_t>self.entries[2])(index, &info)
        if rc != MX_LIB_SUCCESS:
            raise self._bad(None, function, f"returned status {rc} for an index below "
                                            f"mxlib_op_count; the ABI wants {MX_LIB_SUCCESS} "
                                            f"(MX_SUCCESS)")
        name = self._op_name(info.name, function)
        error = None
        if info.error != NULL:
            error = _text(info.error, MX_LIB_MAX_MESSAGE)
            if strnlen(info.error, MX_LIB_MAX_MESSAGE + 1) > MX_LIB_MAX_MESSAGE:
                error += " [cut at MX_LIB_MAX_MESSAGE bytes]"
        return {
            "name": name,
            "error": error,
            "parse_attrs": <size_t>info.parse_attrs,
            "infer_type": <size_t>info.infer_type,
            "infer_shape": <size_t>info.infer_shape,
            "forward": (<size_t>info.forward[0], <size_t>info.forward[1]),
            "backward": (<size_t>info.backward[0], <size_t>info.backward[1]),
            "create_op_state": (<size_t>info.create_op_state[0],
                                <size_t>info.create_op_state[1]),
        }

    def parse_attrs(self, str op, size_t fn, AttrBlock attrs):
        """(num_in, num_out) from the operator's parseAttrs."""
        cdef int32_t nin = -1, nout = -1
        cdef char err[ERR_SIZE]
        memset(err, 0, ERR_SIZE)
        self._status((<mxlib_parse_attrs_t>self.entries[3])(<void*>fn, &attrs.attrs, &nin,
                                                            &nout, err, ERR_SIZE),
                     op, "parseAttrs", err)
        if not 0 <= nin <= MX_LIB_MAX_INPUTS:
            raise self._bad(op, "parseAttrs", f"gave num_in={nin}; the limit is 0 to "
                                              f"{MX_LIB_MAX_INPUTS} (MX_LIB_MAX_INPUTS)")
        if not 1 <= nout <= MX_LIB_MAX_OUTPUTS:
            raise self._bad(op, "parseAttrs", f"gave num_out={nout}; the limit is 1 to "
                                              f"{MX_LIB_MAX_OUTPUTS} (MX_LIB_MAX_OUTPUTS)")
        return nin, nout

    def infer_shape(self, str op, size_t fn, AttrBlock attrs, in_shapes, int num_out):
        """The output shapes (None where the library left one unset), for
        ``num_out`` as parse_attrs gave it."""
        cdef int nin = len(in_shapes), i, j
        cdef int32_t* in_ndim = <int32_t*>calloc(nin + 1, sizeof(int32_t))
        cdef int64_t* in_dims = <int64_t*>calloc(nin * MX_LIB_MAX_DIM + 1, sizeof(int64_t))
        cdef int32_t* out_ndim = <int32_t*>calloc(num_out + 1, sizeof(int32_t))
        cdef int64_t* out_dims = <int64_t*>calloc(num_out * MX_LIB_MAX_DIM + 1, sizeof(int64_t))
        cdef char err[ERR_SIZE]
        memset(err, 0, ERR_SIZE)
        try:
            if in_ndim == NULL or in_dims == NULL or out_ndim == NULL or out_dims == NULL:
                raise MemoryError("mx.library: cannot allocate shape buffers")
            for i, s in enumerate(in_shapes):
                in_ndim[i] = len(s)
                for j, d in enumerate(s):
                    in_dims[i * MX_LIB_MAX_DIM + j] = d
            self._status((<mxlib_infer_shape_t>self.entries[4])(
                <void*>fn, &attrs.attrs, nin, in_ndim, in_dims, num_out, out_ndim, out_dims,
                err, ERR_SIZE), op, "inferShape", err)
            return [self._shape(op, i, out_ndim[i], out_dims + i * MX_LIB_MAX_DIM)
                    for i in range(num_out)]
        finally:
            free(in_ndim)
            free(in_dims)
            free(out_ndim)
            free(out_dims)

    def infer_type(self, str op, size_t fn, AttrBlock attrs, in_types, int num_out):
        """The output dtype flags (-1 where the library left one unset)."""
        cdef int nin = len(in_types), i
        cdef int32_t* ins = <int32_t*>calloc(nin + 1, sizeof(int32_t))
        cdef int32_t* outs = <int32_t*>calloc(num_out + 1, sizeof(int32_t))
        cdef char err[ERR_SIZE]
        memset(err, 0, ERR_SIZE)
        try:
            if ins == NULL or outs == NULL:
                raise MemoryError("mx.library: cannot allocate type buffers")
            for i in range(nin):
                ins[i] = in_types[i]
            self._status((<mxlib_infer_type_t>self.entries[5])(
                <void*>fn, &attrs.attrs, nin, ins, num_out, outs, err, ERR_SIZE),
                op, "inferType", err)
            for i in range(num_out):
                if not -1 <= outs[i] < MX_LIB_NUM_DTYPES:
                    raise self._bad(op, "inferType", f"gave output {i} the dtype flag {outs[i]}; "
                                                     f"the limit is 0 to "
                                                     f"{MX_LIB_NUM_DTYPES - 1} "
                                                     f"(MX_LIB_NUM_DTYPES), or -1 for unset")
            return [outs[i] for i in range(num_out)]
        finally:
            free(ins)
            free(outs)

    def pack_call(self, size_t fn, AttrBlock attrs, StateSlot slot, bytes what,
                  bint is_forward, int fwd_nin, int fwd_first):
        """MXOpCall.params for ``lib_fcompute``: a LibCall.  ``what`` must
        stay alive as long as calls may run (the operator keeps it)."""
        cdef LibCall c
        memset(&c, 0, sizeof(LibCall))
        c.compute = <mxlib_compute_t>self.entries[6]
        c.create_state = <mxlib_create_state_t>self.entries[7]
        c.state_compute = <mxlib_state_compute_t>self.entries[8]
        c.fn = <void*>fn
        c.attrs = &attrs.attrs
        c.slot = slot.slot if slot is not None else NULL
        c.what = what
        c.is_forward = is_forward
        c.fwd_nin = fwd_nin
        c.fwd_first = fwd_first
        return (<char*>&c)[:sizeof(LibCall)]


# ---------------------------------------------------------------------------
# The trampoline
# ---------------------------------------------------------------------------
cdef struct AllocCtx:
    int n
    int dev_id
    bint gpu_used
    StorageHandle blocks[MAX_ALLOCS]


# The pool's functions report failure as a Python exception (except -1);
# called through these exception-less types from a nogil trampoline, a
# failure is a -1 return whose exception is then dropped.
ctypedef int (*_pool_alloc_t)(size_t, int, int, StorageHandle*) noexcept nogil
ctypedef int (*_pool_free_t)(StorageHandle*) noexcept nogil


cdef void _drop_error() noexcept with gil:
    PyErr_Clear()


cdef int _pool_alloc(AllocCtx* a, int64_t size, int dev_type) noexcept nogil:
    """Index of a new pool block in ``a``, or -1 (no memory, or too many)."""
    if size < 0 or a.n >= MAX_ALLOCS:
        return -1
    if (<_pool_alloc_t>storage_alloc)(<size_t>size, dev_type,
                                      0 if dev_type == DEV_CPU else a.dev_id,
                                      &a.blocks[a.n]) != 0:
        _drop_error()          # out of memory, or no GPU: the library sees NULL
        return -1
    if dev_type == DEV_GPU:
        a.gpu_used = True
    a.n += 1
    return a.n - 1


cdef void* _alloc_cpu(void* ctx, int64_t size) noexcept nogil:
    cdef AllocCtx* a = <AllocCtx*>ctx
    cdef int i = _pool_alloc(a, size, DEV_CPU)
    return NULL if i < 0 else a.blocks[i].ptr


cdef void* _alloc_gpu(void* ctx, int64_t size) noexcept nogil:
    cdef AllocCtx* a = <AllocCtx*>ctx
    cdef int i = _pool_alloc(a, size, DEV_GPU)
    return NULL if i < 0 else a.blocks[i].ptr


cdef void _sync_stream(void* stream, int dev_id) noexcept with gil:
    """Waits for the kernels a library queued, before its GPU temporary
    blocks go back to the pool for other streams to reuse."""
    try:
        from cupy.cuda import Device, runtime
        with Device(dev_id):
            runtime.streamSynchronize(<size_t>stream)
    except BaseException:
        pass     # a failed kernel surfaces at the invoker's own stream wait


cdef void _release(AllocCtx* a, void* stream) noexcept nogil:
    cdef int i
    if a.gpu_used:
        _sync_stream(stream, a.dev_id)
    for i in range(a.n):
        if (<_pool_free_t>storage_free)(&a.blocks[i]) != 0:
            _drop_error()      # the pool's own block: fails only on corruption


cdef int lib_fcompute(MXOpCall* c) noexcept nogil:
    """The MXFCompute of every library operator (see the module doc)."""
    cdef const LibCall* p = <const LibCall*>c.params
    cdef int nin = c.nin, nout = c.nout, i, j, rc
    cdef int64_t n
    cdef const char* why
    cdef MXLibTensor* t = <MXLibTensor*>malloc((nin + nout + 1) * sizeof(MXLibTensor))
    cdef const MXTBlob* b
    cdef AllocCtx a
    cdef MXLibResource res
    cdef char err[ERR_SIZE]
    cdef void* state
    if t == NULL:
        c.error = "cannot allocate the call's tensor list"
        return -1
    a.n = 0
    a.gpu_used = False
    a.dev_id = c.inputs[0].dev_id if nin > 0 else (c.outputs[0].dev_id if nout > 0 else 0)
    memset(err, 0, ERR_SIZE)       # the message is only what the library writes
    rc = 1
    for i in range(nin + nout):
        b = &c.inputs[i] if i < nin else &c.outputs[i - nin]
        t[i].data = b.dptr
        t[i].shape = <const int64_t*>&b.shape[0]
        t[i].ndim = b.ndim
        t[i].dtype = b.dtype
        t[i].dev_type = b.dev_type
        t[i].dev_id = b.dev_id
        if i >= nin and (c.req[i - nin] == MX_REQ_ADD or c.req[i - nin] == MX_REQ_NULL):
            # The library only writes: 'add' sums a scratch result in below,
            # 'null' discards it.  The GPU invoker passes only writes.
            n = mx_dtype_size(b.dtype)
            for j in range(b.ndim):
                n *= b.shape[j]
            if b.dev_type == DEV_GPU or _pool_alloc(&a, n, DEV_CPU) < 0:
                rc = 0
                snprintf(err, ERR_SIZE, "%s", "no scratch memory for a req 'add' or 'null' output")
                break
            t[i].data = a.blocks[a.n - 1].ptr
    if rc:
        res.alloc_cpu = _alloc_cpu
        res.alloc_gpu = _alloc_gpu
        res.alloc_ctx = &a
        res.stream = c.stream
        res.is_train = c.is_train
        res.reserved = 0
        if p.slot != NULL:
            p.slot.mu.lock()
            state = lib_state_locked(p, t + p.fwd_first, err, ERR_SIZE)
            if state == NULL:
                rc = 0
            else:
                rc = lib_status(p.state_compute(state, p.is_forward, t, nin, t + nin, nout, &res,
                                                err, ERR_SIZE),
                                "mxlib_state_compute", err, ERR_SIZE)
            p.slot.mu.unlock()
        else:
            rc = lib_status(p.compute(p.fn, p.attrs, t, nin, t + nin, nout, &res, err, ERR_SIZE),
                            "mxlib_compute", err, ERR_SIZE)
    if rc:
        for i in range(nout):
            if c.req[i] == MX_REQ_ADD:
                lib_accumulate(c.outputs[i].dptr, t[nin + i].data, c.outputs[i].dtype,
                               _size(&c.outputs[i]))
    _release(&a, c.stream)
    free(t)
    if not rc:
        why = err
        if err[0] == 0:
            why = "no message"
        c.error = lib_set_error(p.what, why)
        return -1
    return 0


cdef inline int64_t _size(const MXTBlob* b) noexcept nogil:
    cdef int64_t n = 1
    cdef int i
    for i in range(b.ndim):
        n *= b.shape[i]
    return n


def fcompute_address():
    """The address of ``lib_fcompute``, an operator's 'cpu' compute."""
    return <size_t><MXFCompute>lib_fcompute


def run(bytes packed, list inputs, list outputs, int dev_type, int dev_id, size_t stream,
        bint is_train):
    """Calls ``lib_fcompute`` now (the GPU compute of a library operator,
    on the caller's stream): ``inputs``/``outputs`` are (pointer, shape,
    dtype flag) of contiguous device arrays, all written (req 'write')."""
    cdef int nin = len(inputs), nout = len(outputs), i, j, rc
    cdef MXTBlob* blobs = <MXTBlob*>calloc(nin + nout + 1, sizeof(MXTBlob))
    cdef int32_t* req = <int32_t*>calloc(nout + 1, sizeof(int32_t))
    cdef MXOpCall call
    try:
        if blobs == NULL or req == NULL:
            raise MemoryError("mx.library: cannot allocate the call block")
        for i, (ptr, shape, dtype) in enumerate(inputs + outputs):
            if len(shape) > MX_MAX_DIM:
                raise ValueError(f"{len(shape)} dimensions; at most {MX_MAX_DIM} are supported")
            blobs[i].dptr = <void*><size_t>ptr
            blobs[i].ndim = len(shape)
            blobs[i].dtype = dtype
            blobs[i].dev_type = dev_type
            blobs[i].dev_id = dev_id
            for j, d in enumerate(shape):
                blobs[i].shape[j] = d
        for i in range(nout):
            req[i] = 1
        memset(&call, 0, sizeof(MXOpCall))
        call.params = <const char*>packed
        call.nin = nin
        call.nout = nout
        call.inputs = blobs
        call.outputs = blobs + nin
        call.req = req
        call.stream = <void*>stream
        call.is_train = is_train
        with nogil:
            rc = lib_fcompute(&call)
        if rc != 0:
            raise LibraryCallError(call.error.decode(errors="replace"))
    finally:
        free(blobs)
        free(req)
