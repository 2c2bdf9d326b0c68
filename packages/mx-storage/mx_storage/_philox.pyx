# Counter-based CPU random numbers: Philox4x32-10 (Salmon et al., "Parallel
# random numbers: as easy as 1, 2, 3", SC'11; Random123's philox.h).
#
# A counter-based generator has no state to share, so any thread can produce
# any element: element i of a draw is a pure function of (seed, offset + i)
# and filling a range in one piece or in k chunks on k threads gives the same
# bytes.  The stream is defined in _philox.pxd; how each kind turns its block
# (w0, w1, w2, w3) into one value:
#
#   uniform float32  u = (w0 >> 8) * 2**-24 in [0, 1), every value exact; the
#                    result low + (high - low) * u is formed in double, rounded
#                    to float32 and, if rounding reached high, set to the
#                    largest float32 below high, so it stays in [low, high).
#   uniform float64  u = ((w0 << 32 | w1) >> 11) * 2**-53 in [0, 1), exact; the
#                    same affine map (with (1 - u) * low + u * high when
#                    high - low overflows) and the same clamp.  The top 24 bits
#                    of the float64 u are the float32 u.
#   normal           Box-Muller on the element's own block, in double for both
#                    dtypes: u1 = (((w0 << 32 | w1) >> 11) + 1) * 2**-53 in
#                    (0, 1], u2 = ((w2 << 32 | w3) >> 11) * 2**-53 in [0, 1),
#                    z = sqrt(-2 log u1) * cos(2 pi u2), out = mean + std * z
#                    (rounded once to float32 for float32, so with mean and std
#                    representable in float32 the float32 output is the
#                    float64 output rounded).  The sine half is discarded so
#                    that element i needs no neighbour.  |z| <= sqrt(106 log 2)
#                    ~= 8.57: tails beyond 8.57 sigma (probability ~1e-17) are
#                    cut off.
#   randint          Lemire's multiply-shift with rejection ("Fast random
#                    integer generation in an interval", 2019), exactly
#                    unbiased.  r = high - low; int32 takes the candidates w0,
#                    w1, w2, w3 (32-bit, hi(w * r) is the value) and int64 the
#                    candidates w0 << 32 | w1, w2 << 32 | w3 (64-bit, with a
#                    64x64->128 multiply).  A candidate is rejected when the low
#                    half of the product is below 2**bits mod r, which happens
#                    with probability < 1/2 even for the worst r (typically
#                    r / 2**bits); when every candidate of a block is rejected
#                    the element moves to its next block (counter word 3 = 1,
#                    2, ...), still a function of (seed, offset + i) alone.
#                    Expected blocks per element <= 1.07 (int32), <= 1.34
#                    (int64).  high itself is never produced, so the int32/int64
#                    maximum is out of reach (high is an int32_t/int64_t).
import operator
import threading

import numpy as np

from libc.math cimport cos, isfinite, log, nextafter, nextafterf, sqrt
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t

# Random123 philox.h: round multipliers and Weyl key increments.
cdef enum:
    PHILOX_M0 = 0xD2511F53
    PHILOX_M1 = 0xCD9E8D57
    PHILOX_W0 = 0x9E3779B9
    PHILOX_W1 = 0xBB67AE85

cdef double TWO_M24 = 1.0 / 16777216.0
cdef double TWO_M53 = 1.0 / 9007199254740992.0
cdef double TWO_PI = 6.283185307179586


# --- kernels ---------------------------------------------------------------

cdef inline void _philox(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3,
                         uint32_t k0, uint32_t k1, uint32_t* out) noexcept nogil:
    """Ten rounds, key bumped between rounds (philox4x32_R with R = 10)."""
    cdef uint64_t p0, p1
    cdef int r
    for r in range(10):
        if r:
            k0 += <uint32_t>PHILOX_W0
            k1 += <uint32_t>PHILOX_W1
        p0 = <uint64_t><uint32_t>PHILOX_M0 * c0
        p1 = <uint64_t><uint32_t>PHILOX_M1 * c2
        c0 = <uint32_t>(p1 >> 32) ^ c1 ^ k0
        c2 = <uint32_t>(p0 >> 32) ^ c3 ^ k1
        c1 = <uint32_t>p1
        c3 = <uint32_t>p0
    out[0] = c0
    out[1] = c1
    out[2] = c2
    out[3] = c3


cdef inline void _block(uint64_t seed, uint64_t c, uint32_t tag, uint32_t retry,
                        uint32_t* w) noexcept nogil:
    """The block of counter value c (= offset + i) for one kind."""
    _philox(<uint32_t>c, <uint32_t>(c >> 32), tag, retry,
            <uint32_t>seed, <uint32_t>(seed >> 32), w)


cdef inline uint64_t _bits53(uint32_t hi, uint32_t lo) noexcept nogil:
    return (<uint64_t>hi << 21) | (lo >> 11)


cdef inline double _gauss(const uint32_t* w) noexcept nogil:
    cdef double u1 = <double>(_bits53(w[0], w[1]) + 1) * TWO_M53
    cdef double u2 = <double>_bits53(w[2], w[3]) * TWO_M53
    return sqrt(-2.0 * log(u1)) * cos(TWO_PI * u2)


cdef inline uint64_t _mulhilo64(uint64_t a, uint64_t b, uint64_t* lo) noexcept nogil:
    """High half of the 128-bit product a * b; low half to *lo.  Portable
    (no __int128), compilers turn it into one or two multiplies."""
    cdef uint64_t mask = 0xffffffffu
    cdef uint64_t al = a & mask, ah = a >> 32, bl = b & mask, bh = b >> 32
    cdef uint64_t p0 = al * bl, p1 = al * bh, p2 = ah * bl, p3 = ah * bh
    cdef uint64_t mid = (p0 >> 32) + (p1 & mask) + (p2 & mask)
    lo[0] = (mid << 32) | (p0 & mask)
    return p3 + (p1 >> 32) + (p2 >> 32) + (mid >> 32)


cdef void philox4x32_10(const uint32_t* ctr, const uint32_t* key,
                        uint32_t* out) noexcept nogil:
    _philox(ctr[0], ctr[1], ctr[2], ctr[3], key[0], key[1], out)


cpdef uint64_t draws_per_element(int kind) noexcept nogil:
    """Counter values one element of `kind` consumes: advance offset by
    n * draws_per_element(kind) after drawing n elements.  1 for every kind."""
    return PHILOX_COUNTERS_PER_ELEMENT


cdef void fill_uniform_f32(uint64_t seed, uint64_t offset, uint64_t start,
                           float* out, size_t n, float low,
                           float high) noexcept nogil:
    cdef uint32_t w[4]
    cdef double lo = low, span = <double>high - <double>low
    cdef float top = nextafterf(high, low), r
    cdef uint64_t c = offset + start
    cdef size_t j
    for j in range(n):
        _block(seed, c + j, RNG_UNIFORM, 0, w)
        r = <float>(lo + span * (<double>(w[0] >> 8) * TWO_M24))
        out[j] = top if r >= high else r


cdef void fill_uniform_f64(uint64_t seed, uint64_t offset, uint64_t start,
                           double* out, size_t n, double low,
                           double high) noexcept nogil:
    cdef uint32_t w[4]
    cdef double span = high - low, top = nextafter(high, low), u, r
    cdef bint finite = isfinite(span)
    cdef uint64_t c = offset + start
    cdef size_t j
    for j in range(n):
        _block(seed, c + j, RNG_UNIFORM, 0, w)
        u = <double>_bits53(w[0], w[1]) * TWO_M53
        if finite:
            r = low + span * u
        else:
            r = (1.0 - u) * low + u * high
        if r >= high:
            r = top
        elif r < low:
            r = low
        out[j] = r


cdef void fill_normal_f32(uint64_t seed, uint64_t offset, uint64_t start,
                          float* out, size_t n, float mean,
                          float std) noexcept nogil:
    cdef uint32_t w[4]
    cdef double m = mean, s = std
    cdef uint64_t c = offset + start
    cdef size_t j
    for j in range(n):
        _block(seed, c + j, RNG_NORMAL, 0, w)
        out[j] = <float>(m + s * _gauss(w))


cdef void fill_normal_f64(uint64_t seed, uint64_t offset, uint64_t start,
                          double* out, size_t n, double mean,
                          double std) noexcept nogil:
    cdef uint32_t w[4]
    cdef uint64_t c = offset + start
    cdef size_t j
    for j in range(n):
        _block(seed, c + j, RNG_NORMAL, 0, w)
        out[j] = mean + std * _gauss(w)


cdef void fill_randint_i32(uint64_t seed, uint64_t offset, uint64_t start,
                           int32_t* out, size_t n, int32_t low,
                           int32_t high) noexcept nogil:
    cdef uint32_t w[4]
    cdef uint32_t r = <uint32_t>(<int64_t>high - <int64_t>low)
    cdef uint32_t thresh, retry
    cdef uint64_t c = offset + start, m
    cdef size_t j
    cdef int k
    cdef bint done
    if high <= low:     # caller's bug; fill with low rather than divide by 0
        for j in range(n):
            out[j] = low
        return
    thresh = (<uint32_t>0 - r) % r      # 2**32 mod r
    for j in range(n):
        retry = 0
        done = False
        while not done:
            _block(seed, c + j, RNG_RANDINT, retry, w)
            for k in range(4):
                m = <uint64_t>w[k] * r
                if <uint32_t>m >= thresh:
                    out[j] = <int32_t>(<int64_t>low + <int64_t>(m >> 32))
                    done = True
                    break
            retry += 1


cdef void fill_randint_i64(uint64_t seed, uint64_t offset, uint64_t start,
                           int64_t* out, size_t n, int64_t low,
                           int64_t high) noexcept nogil:
    cdef uint32_t w[4]
    cdef uint64_t r = <uint64_t>high - <uint64_t>low
    cdef uint64_t thresh, c = offset + start, x, hi, lo
    cdef uint32_t retry
    cdef size_t j
    cdef int k
    cdef bint done
    if high <= low:     # caller's bug; fill with low rather than divide by 0
        for j in range(n):
            out[j] = low
        return
    thresh = (<uint64_t>0 - r) % r      # 2**64 mod r
    for j in range(n):
        retry = 0
        done = False
        while not done:
            _block(seed, c + j, RNG_RANDINT, retry, w)
            for k in range(2):
                x = (<uint64_t>w[2 * k] << 32) | w[2 * k + 1]
                hi = _mulhilo64(x, r, &lo)
                if lo >= thresh:
                    out[j] = <int64_t>(<uint64_t>low + hi)
                    done = True
                    break
            retry += 1


# --- Python wrappers (validate; the kernels trust their inputs) -------------
#
# Each public function names itself in its errors; the private _fill_* take
# that name as `op` so uniform() and fill_uniform() report as themselves.

_UINT64_MAX = 2**64 - 1
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_INTS = (np.dtype(np.int32), np.dtype(np.int64))


def _integer(op, name, value, lo, hi):
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{op}: argument '{name}' must be an integer, "
                        f"got {type(value).__name__}") from None
    if not lo <= value <= hi:
        raise ValueError(f"{op}: argument '{name}' must be in [{lo}, {hi}], "
                         f"got {value}")
    return value


def _real(op, name, value, dt):
    """value as a Python float holding a finite value of dtype dt."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{op}: argument '{name}' must be a real number, "
                        f"got {value!r}") from None
    if dt == np.float32:
        with np.errstate(over="ignore"):
            x = float(np.float32(x))
    if not isfinite(x):
        raise ValueError(f"{op}: argument '{name}' must be finite in "
                         f"{dt.name}, got {value!r}")
    return x


def _dtype(op, value, allowed):
    try:
        dt = np.dtype(value)
    except (TypeError, ValueError):
        dt = None
    # not `dt in allowed` alone: np.dtype('float64') == None is True
    if value is None or dt is None or dt not in allowed:
        names = ", ".join(repr(d.name) for d in allowed)
        raise ValueError(f"{op}: argument 'dtype' must be one of {names}, "
                         f"got {value!r}")
    return dt


def _out_flat(op, out, allowed):
    if not isinstance(out, np.ndarray):
        raise TypeError(f"{op}: argument 'out' must be a numpy.ndarray, "
                        f"got {type(out).__name__}")
    if out.dtype not in allowed:
        names = ", ".join(repr(d.name) for d in allowed)
        raise ValueError(f"{op}: argument 'out' must have dtype {names}, "
                         f"got {out.dtype.name!r}")
    if not (out.flags.c_contiguous and out.flags.writeable):
        raise ValueError(f"{op}: argument 'out' must be C-contiguous and "
                         f"writeable")
    return out.reshape(-1)


def _stream(op, seed, offset, start):
    return (_integer(op, "seed", seed, 0, _UINT64_MAX),
            _integer(op, "offset", offset, 0, _UINT64_MAX),
            _integer(op, "start", start, 0, _UINT64_MAX))


def _count(op, n):
    return _integer(op, "n", n, 0, np.iinfo(np.intp).max)


def philox_block(ctr, key):
    """Philox4x32-10 of one counter (4 uint32) under one key (2 uint32).

    Returns the 4 output words as a tuple of ints.
    """
    cdef uint32_t c[4]
    cdef uint32_t k[2]
    cdef uint32_t o[4]
    ctr = tuple(ctr)
    key = tuple(key)
    if len(ctr) != 4:
        raise ValueError(f"philox_block: argument 'ctr' must have 4 words, "
                         f"got {len(ctr)}")
    if len(key) != 2:
        raise ValueError(f"philox_block: argument 'key' must have 2 words, "
                         f"got {len(key)}")
    for i in range(4):
        c[i] = _integer("philox_block", "ctr", ctr[i], 0, 0xffffffff)
    for i in range(2):
        k[i] = _integer("philox_block", "key", key[i], 0, 0xffffffff)
    philox4x32_10(c, k, o)
    return (o[0], o[1], o[2], o[3])


def _fill_uniform(op, out, seed, offset, low, high, start):
    cdef uint64_t s, o, st
    cdef float[::1] a32
    cdef double[::1] a64
    cdef size_t n
    flat = _out_flat(op, out, _FLOATS)
    s, o, st = _stream(op, seed, offset, start)
    cdef double lo = _real(op, "low", low, flat.dtype)
    cdef double hi = _real(op, "high", high, flat.dtype)
    if not lo < hi:
        raise ValueError(f"{op}: argument 'high' must be greater than 'low' "
                         f"({lo!r}) in {flat.dtype.name}, got {high!r}")
    n = flat.shape[0]
    if n == 0:
        return out
    if flat.dtype == np.float32:
        a32 = flat
        with nogil:
            fill_uniform_f32(s, o, st, &a32[0], n, <float>lo, <float>hi)
    else:
        a64 = flat
        with nogil:
            fill_uniform_f64(s, o, st, &a64[0], n, lo, hi)
    return out


def _fill_normal(op, out, seed, offset, mean, std, start):
    cdef uint64_t s, o, st
    cdef float[::1] a32
    cdef double[::1] a64
    cdef size_t n
    flat = _out_flat(op, out, _FLOATS)
    s, o, st = _stream(op, seed, offset, start)
    cdef double m = _real(op, "mean", mean, flat.dtype)
    cdef double sd = _real(op, "std", std, flat.dtype)
    if not sd >= 0.0:
        raise ValueError(f"{op}: argument 'std' must be >= 0, got {std!r}")
    n = flat.shape[0]
    if n == 0:
        return out
    if flat.dtype == np.float32:
        a32 = flat
        with nogil:
            fill_normal_f32(s, o, st, &a32[0], n, <float>m, <float>sd)
    else:
        a64 = flat
        with nogil:
            fill_normal_f64(s, o, st, &a64[0], n, m, sd)
    return out


def _fill_randint(op, out, seed, offset, low, high, start):
    cdef uint64_t s, o, st
    cdef int32_t[::1] a32
    cdef int64_t[::1] a64
    cdef int64_t lo, hi
    cdef size_t n
    flat = _out_flat(op, out, _INTS)
    s, o, st = _stream(op, seed, offset, start)
    info = np.iinfo(flat.dtype)
    lo = _integer(op, "low", low, int(info.min), int(info.max))
    hi = _integer(op, "high", high, int(info.min), int(info.max))
    if not lo < hi:
        raise ValueError(f"{op}: argument 'high' must be greater than 'low' "
                         f"({lo}), got {hi}")
    n = flat.shape[0]
    if n == 0:
        return out
    if flat.dtype == np.int32:
        a32 = flat
        with nogil:
            fill_randint_i32(s, o, st, &a32[0], n, <int32_t>lo, <int32_t>hi)
    else:
        a64 = flat
        with nogil:
            fill_randint_i64(s, o, st, &a64[0], n, lo, hi)
    return out


def fill_uniform(out, seed, offset, low=0.0, high=1.0, start=0):
    """Fill a C-contiguous float32/float64 array, in flat order, with
    elements start, start + 1, ... of the Uniform[low, high) stream of
    (seed, offset).  The GIL is released while filling."""
    return _fill_uniform("fill_uniform", out, seed, offset, low, high, start)


def fill_normal(out, seed, offset, mean=0.0, std=1.0, start=0):
    """Fill a C-contiguous float32/float64 array, in flat order, with
    elements start, start + 1, ... of the Normal(mean, std**2) stream of
    (seed, offset).  The GIL is released while filling."""
    return _fill_normal("fill_normal", out, seed, offset, mean, std, start)


def fill_randint(out, seed, offset, low, high, start=0):
    """Fill a C-contiguous int32/int64 array, in flat order, with elements
    start, start + 1, ... of the integer Uniform[low, high) stream of
    (seed, offset).  The GIL is released while filling."""
    return _fill_randint("fill_randint", out, seed, offset, low, high, start)


def uniform(seed, offset, n, low=0.0, high=1.0, dtype="float32", start=0):
    """n samples of Uniform[low, high): elements start .. start + n - 1 of
    the stream of (seed, offset).  Advance offset by n for the next draw."""
    out = np.empty(_count("uniform", n), _dtype("uniform", dtype, _FLOATS))
    return _fill_uniform("uniform", out, seed, offset, low, high, start)


def normal(seed, offset, n, mean=0.0, std=1.0, dtype="float32", start=0):
    """n samples of Normal(mean, std**2): elements start .. start + n - 1 of
    the stream of (seed, offset).  Advance offset by n for the next draw."""
    out = np.empty(_count("normal", n), _dtype("normal", dtype, _FLOATS))
    return _fill_normal("normal", out, seed, offset, mean, std, start)


def randint(seed, offset, n, low, high, dtype="int32", start=0):
    """n integers uniform on [low, high), exactly unbiased: elements
    start .. start + n - 1 of the stream of (seed, offset).  Advance offset
    by n for the next draw."""
    out = np.empty(_count("randint", n), _dtype("randint", dtype, _INTS))
    return _fill_randint("randint", out, seed, offset, low, high, start)


def fill_uniform_parallel(seed, offset, out, nthreads, low=0.0, high=1.0,
                          start=0):
    """fill_uniform split into nthreads contiguous chunks, each filled by its
    own Python thread with the GIL released.  The result does not depend on
    nthreads: that is what the stream definition guarantees."""
    op = "fill_uniform_parallel"
    nthreads = _integer(op, "nthreads", nthreads, 1, 4096)
    flat = _out_flat(op, out, _FLOATS)
    # Validate here, so that a bad argument raises in the caller's thread.
    _fill_uniform(op, flat[:0], seed, offset, low, high, start)
    n = flat.shape[0]
    bounds = [n * k // nthreads for k in range(nthreads + 1)]
    errors = []

    def work(a, b):
        try:
            _fill_uniform(op, flat[a:b], seed, offset, low, high, start + a)
        except BaseException as exc:        # re-raised in the caller below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(bounds[k], bounds[k + 1]))
               for k in range(nthreads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return out
