# C-level view of the counter-based CPU random number generator.
#
# Stream definition (pinned by tests/test_philox.py; changing it changes every
# seeded result, so treat it as ABI):
#
#   key     = (seed & 0xffffffff, seed >> 32)
#   counter = (c & 0xffffffff, c >> 32, tag, retry)   with c = offset + i (mod 2**64)
#   block   = philox4x32_10(counter, key) = (w0, w1, w2, w3)
#
# Element i of a draw (i counted from 0 at `offset`, so a call with `start`
# writes elements start .. start + n - 1) reads only its own block, retry 0,
# unless randint rejects every candidate in it (then retry 1, 2, ...).  An
# element therefore depends on (seed, offset + i, tag) alone: not on n, not on
# how the range is split across threads.  The tag is the distribution
# (RNG_UNIFORM, RNG_NORMAL, RNG_RANDINT), shared by both dtypes of one
# distribution, so the float32 and float64 streams agree (see the .pyx).
#
# Every kind consumes exactly one value of the 64-bit counter c per element:
# after drawing n elements the caller advances offset by
# n * draws_per_element(kind) == n, and the next draw is independent of this one.
#
# Kernels trust their inputs: low < high, std >= 0, finite parameters.  The
# def wrappers in _philox.pyx validate; native callers must do it themselves.
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t

# Counter word 2 of every block: which distribution the block feeds.
cpdef enum RngKind:
    RNG_UNIFORM = 1
    RNG_NORMAL = 2
    RNG_RANDINT = 3
# Tag 4 is taken too: mx-ops' distribution samplers (mx_ops/ops/random/
# samplers.h), where element i reads the blocks (offset + i, 4, k) for
# k = 0, 1, ... in turn, or (uniform, normal, exponential) one word or two
# of block (offset + i // 4 or i // 2, 4, 0) (still one counter value
# reserved per element).

# Values of the 64-bit counter (words 0-1) one element uses, for every kind.
cdef enum:
    PHILOX_COUNTERS_PER_ELEMENT = 1

# Random123's Philox4x32 with 10 rounds: 4 counter words, 2 key words.
cdef void philox4x32_10(const uint32_t* ctr, const uint32_t* key,
                        uint32_t* out) noexcept nogil

# How far to advance offset per element drawn, for an RngKind (always 1).
cpdef uint64_t draws_per_element(int kind) noexcept nogil

# Uniform on [low, high).
cdef void fill_uniform_f32(uint64_t seed, uint64_t offset, uint64_t start,
                           float* out, size_t n, float low,
                           float high) noexcept nogil
cdef void fill_uniform_f64(uint64_t seed, uint64_t offset, uint64_t start,
                           double* out, size_t n, double low,
                           double high) noexcept nogil

# Normal(mean, std**2).
cdef void fill_normal_f32(uint64_t seed, uint64_t offset, uint64_t start,
                          float* out, size_t n, float mean,
                          float std) noexcept nogil
cdef void fill_normal_f64(uint64_t seed, uint64_t offset, uint64_t start,
                          double* out, size_t n, double mean,
                          double std) noexcept nogil

# Integers uniform on [low, high), exactly unbiased.
cdef void fill_randint_i32(uint64_t seed, uint64_t offset, uint64_t start,
                           int32_t* out, size_t n, int32_t low,
                           int32_t high) noexcept nogil
cdef void fill_randint_i64(uint64_t seed, uint64_t offset, uint64_t start,
                           int64_t* out, size_t n, int64_t low,
                           int64_t high) noexcept nogil
