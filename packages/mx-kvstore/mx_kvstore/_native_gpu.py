"""The CuPy twin of _native.pyx's 2bit compression, for arrays on a GPU:
the same packing (value i of a 16-value block is 2 bits of byte i // 4 of
its float32 word, high bits first; 11 is +threshold, 10 is -threshold) and
the same float arithmetic on the residual, so GPU and CPU agree bit for
bit.  The engine worker calls ``run`` with the GIL; importing this module
without CuPy raises ImportError."""
import cupy
import numpy

from mx_ops.core._cuda import launch, raw_module

QUANTIZE, DEQUANTIZE_SUM = 0, 1

_SOURCE = r"""
// One thread per packed word: residual += grad, then each value at or past
// +-threshold is sent (its bits set) and taken off the residual.
__global__ void kv_quantize_2bit(const float *grad, float *residual, float *out,
                                 long long n, float threshold) {
  long long words = (n + 15) / 16;
  for (long long w = blockIdx.x * (long long)blockDim.x + threadIdx.x; w < words;
       w += (long long)blockDim.x * gridDim.x) {
    unsigned char bytes[4] = {0, 0, 0, 0};
    long long start = w * 16, end = start + 16 < n ? start + 16 : n;
    for (long long i = start; i < end; ++i) {
      float r = residual[i] + grad[i];
      if (r >= threshold) {
        bytes[(i - start) >> 2] |= (unsigned char)(0xc0 >> (2 * (i & 3)));
        r = r - threshold;
      } else if (r <= -threshold) {
        bytes[(i - start) >> 2] |= (unsigned char)(0x80 >> (2 * (i & 3)));
        r = r + threshold;
      }
      residual[i] = r;
    }
    unsigned char *dst = reinterpret_cast<unsigned char *>(out + w);
    dst[0] = bytes[0]; dst[1] = bytes[1]; dst[2] = bytes[2]; dst[3] = bytes[3];
  }
}

// out (+)= the dequantised values of one packed array.
__global__ void kv_dequantize_2bit(const float *packed, float *out, long long n,
                                   float threshold, int accumulate) {
  const unsigned char *bytes = reinterpret_cast<const unsigned char *>(packed);
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x) {
    unsigned char mask = (unsigned char)(0xc0 >> (2 * (i & 3)));
    unsigned char bits = bytes[(i >> 4) * 4 + ((i & 15) >> 2)] & mask;
    float v = bits == mask ? threshold
              : (bits == (unsigned char)(mask & (mask << 1)) ? -threshold : 0.0f);
    out[i] = accumulate ? out[i] + v : v;
  }
}
"""
_NAMES = ["kv_quantize_2bit", "kv_dequantize_2bit"]
_kernel = raw_module(_SOURCE, _NAMES)


def compile_cases():
    """The kernel source of this module, for the NVRTC check."""
    return [("raw", "kv_quantize_2bit", _SOURCE, tuple(_NAMES))]


def run(stream_ptr, dev_id, kind, ptrs, n, threshold):
    """Runs one job of _native.pyx on the worker's stream and waits for it
    (a sync engine function's work is done when it returns): QUANTIZE with
    ptrs (grad, residual, out), DEQUANTIZE_SUM with ptrs (packed..., out)."""
    from mx_ndarray._device import stream
    s = stream(stream_ptr, dev_id)
    with cupy.cuda.Device(dev_id), s:
        p = [numpy.uint64(x) for x in ptrs]
        if kind == QUANTIZE:
            launch(_kernel("kv_quantize_2bit"), (n + 15) // 16,
                   (p[0], p[1], p[2], numpy.int64(n), numpy.float32(threshold)))
        else:
            for i, src in enumerate(p[:-1]):
                launch(_kernel("kv_dequantize_2bit"), n,
                       (src, p[-1], numpy.int64(n), numpy.float32(threshold),
                        numpy.int32(i > 0)))
        s.synchronize()
