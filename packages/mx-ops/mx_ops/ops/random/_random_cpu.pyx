"""CPU kernels of the random samplers and _shuffle: mx_storage's Philox fills
(_random_uniform, _random_normal, _random_randint, _shuffle) and the
distribution samplers of random_cpu.h (every other one), run without the
GIL.  Each call's (seed, offset) comes appended to its parameters (MXRandomState in tblob.h), reserved when the call was pushed, so
a kernel is a pure function of its parameters.  float16 draws the float32
stream in chunks and rounds it, so its values are float32's rounded (the
Philox fills; random_cpu.h rounds its double draws to every dtype)."""
from libc.stdint cimport int32_t, int64_t, uint64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy

from mx_ops.core._types cimport (MXFCompute, MXOpCall, MXRandomState, MX_FLOAT32, MX_FLOAT64,
                                 MX_FLOAT16, MX_INT32, MX_INT64, MX_REQ_NULL, MX_REQ_ADD,
                                 mx_tblob_size, mx_random_state)
from mx_storage._philox cimport (fill_uniform_f32, fill_uniform_f64, fill_normal_f32,
                                 fill_normal_f64, fill_randint_i32, fill_randint_i64)

cdef extern from "random_cpu.h" namespace "mxop" nogil:
    int random_dist(MXOpCall* c)
    int sample_dist(MXOpCall* c)
    int sample_multinomial(MXOpCall* c)
    int multinomial_grad(MXOpCall* c)

cdef extern from *:
    """
    #include <stdint.h>
    static void mx_f2h_rand(const float *src, void *dst, int64_t n) {
        _Float16 *d = (_Float16 *)dst;
        for (int64_t i = 0; i < n; ++i) d[i] = (_Float16)src[i];
    }
    """
    void mx_f2h_rand(const float* src, void* dst, int64_t n) nogil

# The packed parameters (mx_ops.ops.random.random): two bounds, then the random state.
cdef struct RealPair:       # _random_uniform (low, high), _random_normal (loc, scale)
    double a
    double b

cdef struct IntPair:        # _random_randint (low, high)
    int64_t a
    int64_t b

cdef enum:
    HALF_CHUNK = 1024       # float32 scratch on the stack for float16 outputs

ctypedef void (*fill32_t)(uint64_t, uint64_t, uint64_t, float*, size_t, float,
                          float) noexcept nogil


cdef int _begin(MXOpCall* c, void* param, size_t size, MXRandomState* s) noexcept nogil:
    """Reads the op's parameters (``size`` bytes) and the random state after
    them; 1 to draw, 0 to skip, -1 for req 'add' (a fresh draw added to old
    values is no distribution MXNet offers)."""
    if c.req[0] == MX_REQ_NULL:
        return 0
    if c.req[0] == MX_REQ_ADD:
        c.error = "req 'add' is not supported by random samplers"
        return -1
    if size:
        memcpy(param, c.params, size)
    s[0] = mx_random_state(c.params, size)
    return 1


cdef void _half(fill32_t fill, MXRandomState s, void* out, int64_t n, float a,
                float b) noexcept nogil:
    cdef float buf[HALF_CHUNK]
    cdef int64_t start = 0, m
    while start < n:
        m = min(<int64_t>HALF_CHUNK, n - start)
        fill(s.seed, s.offset, <uint64_t>start, buf, <size_t>m, a, b)
        mx_f2h_rand(buf, <char*>out + 2 * start, m)
        start += m


cdef int _real(MXOpCall* c, bint normal) noexcept nogil:
    cdef RealPair p
    cdef MXRandomState s
    cdef int go = _begin(c, &p, sizeof(RealPair), &s)
    if go <= 0:
        return go
    cdef int64_t n = mx_tblob_size(&c.outputs[0])
    cdef void* out = c.outputs[0].dptr
    cdef int dtype = c.outputs[0].dtype
    if dtype == MX_FLOAT32:
        if normal:
            fill_normal_f32(s.seed, s.offset, 0, <float*>out, n, <float>p.a, <float>p.b)
        else:
            fill_uniform_f32(s.seed, s.offset, 0, <float*>out, n, <float>p.a, <float>p.b)
    elif dtype == MX_FLOAT64:
        if normal:
            fill_normal_f64(s.seed, s.offset, 0, <double*>out, n, p.a, p.b)
        else:
            fill_uniform_f64(s.seed, s.offset, 0, <double*>out, n, p.a, p.b)
    elif dtype == MX_FLOAT16:
        _half(fill_normal_f32 if normal else fill_uniform_f32, s, out, n, <float>p.a,
              <float>p.b)
    else:
        c.error = "unsupported dtype (float16, float32, float64 only)"
        return -1
    return 0


cdef int random_uniform(MXOpCall* c) noexcept nogil:
    return _real(c, False)


cdef int random_normal(MXOpCall* c) noexcept nogil:
    return _real(c, True)


cdef int random_randint(MXOpCall* c) noexcept nogil:
    cdef IntPair p
    cdef MXRandomState s
    cdef int go = _begin(c, &p, sizeof(IntPair), &s)
    if go <= 0:
        return go
    cdef int64_t n = mx_tblob_size(&c.outputs[0])
    if c.outputs[0].dtype == MX_INT32:
        fill_randint_i32(s.seed, s.offset, 0, <int32_t*>c.outputs[0].dptr, n,
                         <int32_t>p.a, <int32_t>p.b)
    elif c.outputs[0].dtype == MX_INT64:
        fill_randint_i64(s.seed, s.offset, 0, <int64_t*>c.outputs[0].dptr, n, p.a, p.b)
    else:
        c.error = "unsupported dtype (int32, int64 only)"
        return -1
    return 0


cdef int shuffle(MXOpCall* c) noexcept nogil:
    """Fisher-Yates over the rows (first axis): step k = 0 .. rows-2 swaps
    row i = rows-1-k with row j, an exact (rejection-sampled) integer on
    [0, i] drawn as element k of the randint stream, so the permutation is
    unbiased and depends only on (seed, offset, rows)."""
    cdef MXRandomState s
    cdef int go = _begin(c, NULL, 0, &s)
    if go <= 0:
        return go
    cdef const char* src = <const char*>c.inputs[0].dptr
    cdef char* out = <char*>c.outputs[0].dptr
    cdef int64_t rows = c.outputs[0].shape[0] if c.outputs[0].ndim > 0 else 1
    cdef int64_t n = mx_tblob_size(&c.outputs[0])
    cdef int64_t itemsize = 2 if c.outputs[0].dtype == MX_FLOAT16 else (
        8 if c.outputs[0].dtype in (MX_FLOAT64, MX_INT64) else (
            4 if c.outputs[0].dtype in (MX_FLOAT32, MX_INT32) else 1))
    cdef int64_t row = (n // rows) * itemsize if rows > 0 else 0
    cdef int64_t i, j, k
    cdef char* tmp
    if out != src:
        memcpy(out, src, n * itemsize)
    if rows < 2 or row == 0:
        return 0
    tmp = <char*>malloc(row)
    if tmp == NULL:
        c.error = "cannot allocate a row buffer"
        return -1
    for k in range(rows - 1):
        i = rows - 1 - k
        fill_randint_i64(s.seed, s.offset, <uint64_t>k, &j, 1, 0, i + 1)
        if j != i:
            memcpy(tmp, out + i * row, row)
            memcpy(out + i * row, out + j * row, row)
            memcpy(out + j * row, tmp, row)
    free(tmp)
    return 0


def kernels():
    """{'uniform', 'normal', 'randint', 'shuffle', 'dist', 'sample', 'multinomial',
    'multinomial_grad'} -> kernel address (the last four: random_cpu.h)."""
    return {"dist": <size_t><MXFCompute>random_dist,
            "sample": <size_t><MXFCompute>sample_dist,
            "multinomial": <size_t><MXFCompute>sample_multinomial,
            "multinomial_grad": <size_t><MXFCompute>multinomial_grad,
            "uniform": <size_t><MXFCompute>random_uniform,
            "normal": <size_t><MXFCompute>random_normal,
            "randint": <size_t><MXFCompute>random_randint,
            "shuffle": <size_t><MXFCompute>shuffle}
