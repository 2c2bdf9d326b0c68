# The KVStore's native engine functions, pushed with the arrays' variables
# and run by a worker without the GIL: the sum of a key's values over CPU
# devices, the copy of a stored value into several CPU arrays (one function
# for all), and MXNet 1.9.1's 2bit gradient compression (threshold, residual
# error feedback, 16 values packed into each float32 word).  For GPU arrays
# the compression runs the CuPy twin in _native_gpu.py (the worker takes the
# GIL for that call); sums and copies on GPUs go through mx.nd's operators.
from cpython.ref cimport PyObject, Py_INCREF, Py_XDECREF
from libc.stdint cimport int32_t, int64_t, uint8_t
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy

from mx_engine._context cimport Context, DEV_GPU
from mx_engine._engine cimport (EngineVar, RunContextC, PROP_NORMAL, push_native,
                                set_native_error)
from mx_ndarray._chunk cimport Chunk, _chunk_incref, _chunk_decref
from mx_ndarray._ndarray cimport NDArray

cdef extern from "kv_stream.h" nogil:
    void kv_add2_f32(const float* a, const float* b, float* dst, int64_t n)
    void kv_add2_f32_to2(const float* a, const float* b, float* dst, float* dst2, int64_t n)
    void kv_copy(char* dst, const char* src, size_t n, int stream)
    size_t KV_STREAM_BYTES

# Which function a job runs (the GPU twin takes the same numbers).
cdef enum:
    QUANTIZE = 0          # buffers: grad (read); residual, out (written)
    DEQUANTIZE_SUM = 1    # buffers: compressed 0..k-1 (read); out (written)
    SUM = 2               # buffers: values 0..k-1 (read); out (written)
    COPY = 3              # buffers: source (read); outs (written)

# NDArray.dtype_flag numbers (MXNet's) that SUM adds natively.
cdef enum:
    FLOAT32 = 0
    FLOAT64 = 1
    INT32 = 4
    INT64 = 6

SUM_DTYPES = ("float32", "float64", "int32", "int64")

ctypedef fused num_t:
    float
    double
    int32_t
    int64_t

cdef enum:
    MAX_BUFFERS = 1024    # arrays in one job (devices of a key, plus the output)


cdef struct Job:
    int kind
    int nbufs
    int64_t n             # values (not packed words)
    int dtype             # SUM: the dtype flag; COPY: the item size in bytes
    float threshold
    PyObject* gpu_fn      # the CuPy twin for GPU arrays, else NULL
    Chunk* chunks[1]      # nbufs chunks, then nbufs byte offsets (one allocation)


cdef inline size_t* _offsets(Job* j) noexcept nogil:
    return <size_t*>(<char*>j + sizeof(Job) + (j.nbufs - 1) * sizeof(Chunk*))


cdef inline float* _buf(Job* j, int i) noexcept nogil:
    return <float*>(<char*>j.chunks[i].h.ptr + _offsets(j)[i])


# --- kernels (MXNet's quantize_2bit / dequantize_2bit, gradient_compression-inl.h) --------

cdef void quantize_2bit(const float* grad, float* residual, float* out, int64_t n,
                        float threshold) noexcept nogil:
    """Adds grad into residual; each value at or beyond +-threshold is sent
    as 11 (+threshold) or 10 (-threshold) and taken off the residual, the
    rest as 00.  Value i of a block is 2 bits of byte i // 4, high bits first."""
    cdef int64_t block, i, start, end
    cdef uint8_t word[4]
    cdef float r
    for block in range((n + 15) // 16):
        start = block * 16
        end = start + 16 if start + 16 <= n else n
        word[0] = 0
        word[1] = 0
        word[2] = 0
        word[3] = 0
        for i in range(start, end):
            r = residual[i] + grad[i]
            if r >= threshold:
                word[(i - start) >> 2] |= <uint8_t>(0xc0 >> (2 * (i & 3)))
                r = r - threshold
            elif r <= -threshold:
                word[(i - start) >> 2] |= <uint8_t>(0x80 >> (2 * (i & 3)))
                r = r + threshold
            residual[i] = r
        memcpy(&out[block], word, 4)


cdef void dequantize_2bit(const float* packed, float* out, int64_t n, float threshold,
                          bint accumulate) noexcept nogil:
    """out (+)= the values quantize_2bit packed: +threshold, -threshold or 0."""
    cdef const uint8_t* bytes_ = <const uint8_t*>packed
    cdef int64_t i
    cdef uint8_t mask, bits
    cdef float v
    for i in range(n):
        mask = <uint8_t>(0xc0 >> (2 * (i & 3)))
        bits = bytes_[(i >> 4) * 4 + ((i & 15) >> 2)] & mask
        if bits == mask:
            v = threshold
        elif bits == (mask & (mask << 1)):       # only the high bit: 10
            v = -threshold
        else:
            v = 0
        out[i] = out[i] + v if accumulate else v


cdef void sum_arrays(num_t** src, int nsrc, num_t* out, int64_t n) noexcept nogil:
    """out = ((src0 + src1) + src2) + ..., left to right as add_n; out may be src0."""
    cdef int64_t i
    cdef int k
    if nsrc == 1:
        for i in range(n):
            out[i] = src[0][i]
        return
    for i in range(n):
        out[i] = src[0][i] + src[1][i]
    for k in range(2, nsrc):
        for i in range(n):
            out[i] = out[i] + src[k][i]


cdef void _sum_job(Job* j) noexcept nogil:
    cdef void* ptrs[MAX_BUFFERS]
    cdef int i
    for i in range(j.nbufs):
        ptrs[i] = _buf(j, i)
    if j.dtype == FLOAT32 and j.nbufs == 3:
        kv_add2_f32(<float*>ptrs[0], <float*>ptrs[1], <float*>ptrs[2], j.n)
    elif j.dtype == FLOAT32:
        sum_arrays(<float**>ptrs, j.nbufs - 1, <float*>ptrs[j.nbufs - 1], j.n)
    elif j.dtype == FLOAT64:
        sum_arrays(<double**>ptrs, j.nbufs - 1, <double*>ptrs[j.nbufs - 1], j.n)
    elif j.dtype == INT32:
        sum_arrays(<int32_t**>ptrs, j.nbufs - 1, <int32_t*>ptrs[j.nbufs - 1], j.n)
    else:
        sum_arrays(<int64_t**>ptrs, j.nbufs - 1, <int64_t*>ptrs[j.nbufs - 1], j.n)


cdef void _copy_job(Job* j) noexcept nogil:
    """Copies buffer 0 into the others a chunk at a time, so the source is
    read from memory once and each chunk comes from cache for the rest."""
    cdef size_t total = <size_t>j.n * j.dtype, off, length, step = 65536
    cdef int stream = total >= KV_STREAM_BYTES
    cdef char* src = <char*>_buf(j, 0)
    cdef int i
    off = 0
    while off < total:
        length = step if off + step <= total else total - off
        for i in range(1, j.nbufs):
            kv_copy(<char*>_buf(j, i) + off, src + off, length, stream)
        off += length


# --- engine functions ----------------------------------------------------------------------

cdef int _run(RunContextC* rctx, void* arg) noexcept nogil:
    cdef Job* j = <Job*>arg
    cdef int i
    if j.gpu_fn != NULL:
        return _run_gpu(rctx, j)
    if j.kind == SUM:
        _sum_job(j)
    elif j.kind == COPY:
        _copy_job(j)
    elif j.kind == QUANTIZE:
        quantize_2bit(_buf(j, 0), _buf(j, 1), _buf(j, 2), j.n, j.threshold)
    else:
        for i in range(j.nbufs - 1):
            dequantize_2bit(_buf(j, i), _buf(j, j.nbufs - 1), j.n, j.threshold, i > 0)
    return 0


cdef int _run_gpu(RunContextC* rctx, Job* j) noexcept with gil:
    cdef int i
    try:
        ptrs = [<size_t>_buf(j, i) for i in range(j.nbufs)]
        (<object>j.gpu_fn)(<size_t>rctx.stream, rctx.dev_id, j.kind, ptrs, j.n, j.threshold)
    except BaseException as exc:
        msg = f"kvstore 2bit compression: {type(exc).__name__}: {exc}"
        set_native_error(rctx, msg.encode("utf-8", "replace"))
        return 1
    return 0


cdef void _drop_py(PyObject* obj) noexcept with gil:
    Py_XDECREF(obj)


cdef void _free_job(void* arg) noexcept nogil:
    cdef Job* j = <Job*>arg
    cdef int i
    for i in range(j.nbufs):
        _chunk_decref(j.chunks[i])
    if j.gpu_fn != NULL:
        _drop_py(j.gpu_fn)
    free(j)


cdef int _push(int kind, list reads, list writes, int64_t n, float threshold, int priority,
               Context ctx, const char* name, int dtype=0) except -1:
    """Pushes one job reading ``reads`` and writing ``writes`` (float32
    NDArrays, checked by the caller) on ``ctx``; the job holds a reference
    to each array's memory until it has run."""
    cdef list bufs = reads + writes
    cdef int nbufs = len(bufs), i
    cdef NDArray a
    if nbufs > MAX_BUFFERS:
        raise ValueError(f"kvstore: {nbufs} arrays in one call; at most {MAX_BUFFERS}")
    gpu_fn = None
    if ctx.device_typeid == DEV_GPU:
        from mx_kvstore._native_gpu import run as gpu_fn
    cdef Job* j = <Job*>malloc(sizeof(Job) + (nbufs - 1) * sizeof(Chunk*)
                               + nbufs * sizeof(size_t))
    cdef EngineVar** vars_ = <EngineVar**>malloc(nbufs * sizeof(EngineVar*))
    if j == NULL or vars_ == NULL:
        free(j)
        free(vars_)
        raise MemoryError("kvstore 2bit compression: cannot allocate a job")
    j.kind = kind
    j.nbufs = nbufs
    j.n = n
    j.threshold = threshold
    j.dtype = dtype
    j.gpu_fn = NULL
    if gpu_fn is not None:
        Py_INCREF(gpu_fn)
        j.gpu_fn = <PyObject*>gpu_fn
    for i in range(nbufs):
        a = <NDArray>bufs[i]
        _chunk_incref(a.chunk)
        j.chunks[i] = a.chunk
        _offsets(j)[i] = a.offset
        vars_[i] = a.chunk.var
    try:
        # On failure push_native frees the job (and so its references).
        push_native(_run, j, _free_job, ctx, vars_, len(reads), vars_ + len(reads),
                    len(writes), PROP_NORMAL, priority, name)
    finally:
        free(vars_)
    return 0


def push_sum(list values, NDArray out, int priority=0):
    """Pushes ``out = values[0] + values[1] + ...``: dense arrays in CPU
    memory (any CPU context) of out's shape and a dtype in SUM_DTYPES
    (checked by the caller); runs on out's context."""
    _push(SUM, values, [out], out.size, 0, priority, out.context, b"kvstore_reduce",
          out.dtype_flag)


def push_copy(NDArray src, list outs, int priority=0):
    """Pushes one function copying ``src`` into every array of ``outs``:
    dense arrays in CPU memory of src's shape and dtype (checked by the
    caller); runs on src's context."""
    _push(COPY, [src], outs, src.size, 0, priority, src.context, b"kvstore_broadcast",
          src.dtype.itemsize)


def push_quantize_2bit(NDArray grad, NDArray residual, NDArray out, float threshold,
                       int priority=0):
    """Pushes ``residual += grad``, then its 2bit quantisation into ``out``
    (``ceil(grad.size / 16)`` float32 words) with the sent values taken off
    ``residual``; runs on grad's device."""
    _push(QUANTIZE, [grad], [residual, out], grad.size, threshold, priority, grad.context,
          b"kvstore_quantize_2bit")


def push_dequantize_sum_2bit(list packed, NDArray out, float threshold, int priority=0):
    """Pushes ``out = sum of the dequantised arrays in packed`` (each
    ``ceil(out.size / 16)`` words, on out's device); runs on out's device."""
    _push(DEQUANTIZE_SUM, packed, [out], out.size, threshold, priority, out.context,
          b"kvstore_dequantize_2bit")


def quantize_2bit_host(const float[::1] grad, float[::1] residual, float[::1] out,
                       float threshold):
    """The CPU kernel on NumPy buffers, now (tests, benchmarks)."""
    if residual.shape[0] != grad.shape[0] or out.shape[0] != (grad.shape[0] + 15) // 16:
        raise ValueError(f"quantize_2bit_host: grad has {grad.shape[0]} values, residual "
                         f"{residual.shape[0]}, out {out.shape[0]} words; need equal and "
                         f"{(grad.shape[0] + 15) // 16}")
    with nogil:
        quantize_2bit(&grad[0] if grad.shape[0] else NULL, &residual[0] if grad.shape[0] else NULL,
                      &out[0] if out.shape[0] else NULL, grad.shape[0], threshold)


def dequantize_2bit_host(const float[::1] packed, float[::1] out, float threshold,
                         bint accumulate=False):
    """The CPU dequantisation on NumPy buffers, now (tests, benchmarks; the
    distributed store's servers, which add each worker's push into ``out``
    with ``accumulate``)."""
    if packed.shape[0] != (out.shape[0] + 15) // 16:
        raise ValueError(f"dequantize_2bit_host: {out.shape[0]} values need "
                         f"{(out.shape[0] + 15) // 16} packed words, got {packed.shape[0]}")
    with nogil:
        dequantize_2bit(&packed[0] if packed.shape[0] else NULL,
                        &out[0] if out.shape[0] else NULL, out.shape[0], threshold, accumulate)


def stream_copy_host(unsigned char[::1] dst, const unsigned char[::1] src):
    """dst[:] = src (bytes), with streaming stores from KV_STREAM_BYTES up:
    the distributed store's shared-memory copies, read next by another
    process's core."""
    if dst.shape[0] != src.shape[0]:
        raise ValueError(f"stream_copy_host: {src.shape[0]} bytes into {dst.shape[0]}")
    cdef size_t n = dst.shape[0]
    if n:
        with nogil:
            kv_copy(<char*>&dst[0], <const char*>&src[0], n, n >= KV_STREAM_BYTES)


def stream_add2_f32_host(const float[::1] a, const float[::1] b, float[::1] out,
                         float[::1] out2=None):
    """out[:] = a + b (and out2[:], the same sums), float32, streaming from
    KV_STREAM_BYTES up: a worker-summed chunk of the distributed store."""
    cdef int64_t n = a.shape[0]
    if b.shape[0] != n or out.shape[0] != n or (out2 is not None and out2.shape[0] != n):
        raise ValueError(f"stream_add2_f32_host: lengths {a.shape[0]}, {b.shape[0]} -> "
                         f"{out.shape[0]}{'' if out2 is None else f', {out2.shape[0]}'}")
    cdef float* second = NULL
    if out2 is not None and n:
        second = &out2[0]
    if n:
        with nogil:
            kv_add2_f32_to2(&a[0], &b[0], &out[0], second, n)
