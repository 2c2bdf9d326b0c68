"""Opening custom-operator libraries and calling into them (mx.library.load).

Two halves.  ``Library`` opens a shared object (dlopen) and calls its
entry points for the loader and for inference: parseAttrs, inferShape and
inferType run from Python, before a call is pushed.  ``lib_fcompute`` is the
MXFCompute trampoline that the engine runs with no GIL: from the packed
parameters (``pack_call``) it takes the library's entry point, the
operator's function and attribute block, turns the MXOpCall's TBlobs into
the library's MXLibTensors and calls forward or backward (or the stateful
operator's Forward/Backward).  Only lib_abi.h's C types cross the boundary.
"""
from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport calloc, free, malloc
from libc.stdio cimport snprintf
from libc.string cimport memset
from libcpp.mutex cimport mutex
from cpython.exc cimport PyErr_Clear
from posix.dlfcn cimport dlclose, dlerror, dlopen, dlsym, RTLD_LOCAL, RTLD_NOW

from mx_engine._context cimport DEV_CPU, DEV_GPU
from mx_ops._types cimport (MXFCompute, MXOpCall, MXTBlob, MX_MAX_DIM, MX_REQ_ADD,
                            MX_REQ_NULL)
from mx_storage._storage cimport StorageHandle, storage_alloc, storage_free

from mx_engine.base import MXNetError

cdef extern from "mx_ops/lib_abi.h" nogil:
    enum:
        MX_LIB_ABI_VERSION
        MX_LIB_MAX_DIM
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
    const char* lib_set_error(const char* what, const char* why)
    int lib_accumulate(void* dst, const void* src, int32_t dtype, int64_t n)
    int64_t mx_dtype_size(int32_t dtype)

ABI_VERSION = MX_LIB_ABI_VERSION
MAX_DIM = MX_LIB_MAX_DIM

# The entry points every library exports (lib_abi.h), in the order they are
# looked up.
ENTRY_POINTS = ("mxlib_abi_version", "mxlib_op_count", "mxlib_op_info", "mxlib_parse_attrs",
                "mxlib_infer_shape", "mxlib_infer_type", "mxlib_compute",
                "mxlib_create_state", "mxlib_state_compute", "mxlib_destroy_state")

DEF ERR_SIZE = 512
# Temporary blocks one call may take (OpResource::alloc_cpu/alloc_gpu and
# the scratch outputs of req 'add'/'null'); more is a library bug.
DEF MAX_ALLOCS = 64


class LibraryCallError(MXNetError):
    """A library function that returned MX_FAIL (or threw); the text is the
    library's own message."""


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
    """An opened custom-operator library."""
    cdef void* handle
    cdef readonly str path
    cdef readonly list missing          # entry points it does not export
    cdef void* entries[10]

    def __cinit__(self, str path):
        cdef bytes p = path.encode()
        cdef const char* why
        self.path = path
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

    def abi_version(self):
        """The ABI version the library was built for, or None."""
        if self.entries[0] == NULL:
            return None
        return (<mxlib_abi_version_t>self.entries[0])()

    def op_count(self):
        return (<mxlib_op_count_t>self.entries[1])()

    def op_info(self, int index):
        """The registration of operator ``index``: its name, a registration
        error (or None) and the function addresses (0 where unset)."""
        cdef MXLibOpInfo info
        memset(&info, 0, sizeof(MXLibOpInfo))
        if not (<mxlib_op_info_t>self.entries[2])(index, &info):
            raise LibraryCallError(f"mxlib_op_info({index}) failed")
        return {
            "name": info.name.decode(errors="replace") if info.name != NULL else "",
            "error": info.error.decode(errors="replace") if info.error != NULL else None,
            "parse_attrs": <size_t>info.parse_attrs,
            "infer_type": <size_t>info.infer_type,
            "infer_shape": <size_t>info.infer_shape,
            "forward": (<size_t>info.forward[0], <size_t>info.forward[1]),
            "backward": (<size_t>info.backward[0], <size_t>info.backward[1]),
            "create_op_state": (<size_t>info.create_op_state[0],
                                <size_t>info.create_op_state[1]),
        }

    def parse_attrs(self, size_t fn, AttrBlock attrs):
        """(num_in, num_out) from the operator's parseAttrs."""
        cdef int32_t nin = -1, nout = -1
        cdef char err[ERR_SIZE]
        err[0] = 0
        if not (<mxlib_parse_attrs_t>self.entries[3])(<void*>fn, &attrs.attrs, &nin, &nout,
                                                      err, ERR_SIZE):
            raise LibraryCallError(err.decode(errors="replace"))
        return nin, nout

    def infer_shape(self, size_t fn, AttrBlock attrs, in_shapes, int num_out):
        """The output shapes (None where the library left one unset)."""
        cdef int nin = len(in_shapes), i, j
        cdef int32_t* in_ndim = <int32_t*>calloc(nin + 1, sizeof(int32_t))
        cdef int64_t* in_dims = <int64_t*>calloc(nin * MX_LIB_MAX_DIM + 1, sizeof(int64_t))
        cdef int32_t* out_ndim = <int32_t*>calloc(num_out + 1, sizeof(int32_t))
        cdef int64_t* out_dims = <int64_t*>calloc(num_out * MX_LIB_MAX_DIM + 1, sizeof(int64_t))
        cdef char err[ERR_SIZE]
        cdef int rc
        err[0] = 0
        try:
            if in_ndim == NULL or in_dims == NULL or out_ndim == NULL or out_dims == NULL:
                raise MemoryError("mx.library: cannot allocate shape buffers")
            for i, s in enumerate(in_shapes):
                in_ndim[i] = len(s)
                for j, d in enumerate(s):
                    in_dims[i * MX_LIB_MAX_DIM + j] = d
            rc = (<mxlib_infer_shape_t>self.entries[4])(<void*>fn, &attrs.attrs, nin, in_ndim,
                                                        in_dims, num_out, out_ndim, out_dims,
                                                        err, ERR_SIZE)
            if not rc:
                raise LibraryCallError(err.decode(errors="replace"))
            return [None if out_ndim[i] < 0 else
                    tuple([out_dims[i * MX_LIB_MAX_DIM + j] for j in range(out_ndim[i])])
                    for i in range(num_out)]
        finally:
            free(in_ndim)
            free(in_dims)
            free(out_ndim)
            free(out_dims)

    def infer_type(self, size_t fn, AttrBlock attrs, in_types, int num_out):
        """The output dtype flags (-1 where the library left one unset)."""
        cdef int nin = len(in_types), i
        cdef int32_t* ins = <int32_t*>calloc(nin + 1, sizeof(int32_t))
        cdef int32_t* outs = <int32_t*>calloc(num_out + 1, sizeof(int32_t))
        cdef char err[ERR_SIZE]
        err[0] = 0
        try:
            if ins == NULL or outs == NULL:
                raise MemoryError("mx.library: cannot allocate type buffers")
            for i in range(nin):
                ins[i] = in_types[i]
            if not (<mxlib_infer_type_t>self.entries[5])(<void*>fn, &attrs.attrs, nin, ins,
                                                         num_out, outs, err, ERR_SIZE):
                raise LibraryCallError(err.decode(errors="replace"))
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
    err[0] = 0
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
                rc = p.state_compute(state, p.is_forward, t, nin, t + nin, nout, &res, err,
                                     ERR_SIZE)
            p.slot.mu.unlock()
        else:
            rc = p.compute(p.fn, p.attrs, t, nin, t + nin, nout, &res, err, ERR_SIZE)
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
