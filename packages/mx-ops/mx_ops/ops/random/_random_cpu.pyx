"""CPU kernels of the random samplers and _shuffle: mx_storage's Philox fills
(_random_randint, _shuffle) and the distribution samplers of random_cpu.h
(every other one: uniform and normal included), run without the GIL.  Each
call's (seed, offset) comes appended to its parameters (MXRandomState in
tblob.h), reserved when the call was pushed, so a kernel is a pure function
of its parameters."""
from libc.stdint cimport int32_t, int64_t, uint64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy

from mx_ops.core._types cimport (MXFCompute, MXOpCall, MXRandomState, MX_FLOAT32, MX_FLOAT64,
                                 MX_FLOAT16, MX_INT32, MX_INT64, MX_REQ_NULL, MX_REQ_ADD,
                                 mx_tblob_size, mx_random_state)
from mx_storage._philox cimport fill_randint_i32, fill_randint_i64

cdef extern from "random_cpu.h" namespace "mxop" nogil:
    int random_dist(MXOpCall* c)
    int sample_dist(MXOpCall* c)
    int sample_multinomial(MXOpCall* c)
    int multinomial_grad(MXOpCall* c)

# samplers.h's own maths (no libm), for tests/test_random_math.py.
cdef extern from "samplers.h" nogil:
    double mx_rng_log(double x)
    double mx_rng_exp(double y)
    double mx_rng_cos2pi(double u)
    void mx_rng_sincos2pi(double u, double* c, double* s)
    float mx_rng_logf(float x)
    void mx_rng_sincos2pi(float u, float* c, float* s)

# The packed parameters of _random_randint (mx_ops.ops.random.random): the
# bounds, then the random state.
cdef struct IntPair:
    int64_t a
    int64_t b


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


def sampler_math(str name, x):
    """samplers.h's ``name`` over the 1-d array ``x``: 'log', 'exp',
    'cos2pi' (mx_rng_cos2pi) in double, 'logf' in float, or 'sincos2pi' /
    'sincosf2pi', which give (cos, sin)."""
    import numpy
    cdef bint single = name in ("logf", "sincosf2pi")
    cdef Py_ssize_t i, n = len(x)
    cdef double[::1] xd, yd, zd
    cdef float[::1] xf, yf, zf
    if single:
        xf = numpy.ascontiguousarray(x, numpy.float32)
        yf = numpy.empty(n, numpy.float32)
        zf = numpy.empty(n, numpy.float32)
        for i in range(n):
            if name == "logf":
                yf[i] = mx_rng_logf(xf[i])
            else:
                mx_rng_sincos2pi(xf[i], &yf[i], &zf[i])
        return numpy.asarray(yf) if name == "logf" else (numpy.asarray(yf), numpy.asarray(zf))
    xd = numpy.ascontiguousarray(x, numpy.float64)
    yd = numpy.empty(n, numpy.float64)
    zd = numpy.empty(n, numpy.float64)
    for i in range(n):
        if name == "log":
            yd[i] = mx_rng_log(xd[i])
        elif name == "exp":
            yd[i] = mx_rng_exp(xd[i])
        elif name == "cos2pi":
            yd[i] = mx_rng_cos2pi(xd[i])
        else:
            mx_rng_sincos2pi(xd[i], &yd[i], &zd[i])
    return (numpy.asarray(yd), numpy.asarray(zd)) if name == "sincos2pi" else numpy.asarray(yd)


def kernels():
    """{'dist', 'sample', 'multinomial', 'multinomial_grad', 'randint', 'shuffle'}
    -> kernel address (the first four: random_cpu.h)."""
    return {"dist": <size_t><MXFCompute>random_dist,
            "sample": <size_t><MXFCompute>sample_dist,
            "multinomial": <size_t><MXFCompute>sample_multinomial,
            "multinomial_grad": <size_t><MXFCompute>multinomial_grad,
            "randint": <size_t><MXFCompute>random_randint,
            "shuffle": <size_t><MXFCompute>shuffle}
