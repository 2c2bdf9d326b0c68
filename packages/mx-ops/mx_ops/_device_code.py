"""CUDA device functions of the GPU twins that are plain arithmetic, kept
apart from CuPy (this module imports nothing) so that the tests can compile
them for the host with the C++ compiler (``__device__`` defined away) and
compare them with the CPU kernels on machines without a GPU.  The GPU
modules paste them into their RawKernel sources."""

# Philox4x32-10 of Random123 (mx_storage/_philox.pxd's stream) for one
# block, word 0 turned into element c's float32 uniform on [0, 1) with
# RNG_UNIFORM's tag in counter word 2: the very value fill_uniform_f32 gives.
PHILOX_UNIFORM = r"""
__device__ float mx_philox_uniform(unsigned long long seed, unsigned long long c) {
  unsigned int c0 = (unsigned int)c, c1 = (unsigned int)(c >> 32), c2 = 1u, c3 = 0u;
  unsigned int k0 = (unsigned int)seed, k1 = (unsigned int)(seed >> 32);
  for (int r = 0; r < 10; ++r) {
    if (r) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    const unsigned long long p0 = 0xD2511F53ull * c0, p1 = 0xCD9E8D57ull * c2;
    const unsigned int n0 = (unsigned int)(p1 >> 32) ^ c1 ^ k0;
    const unsigned int n2 = (unsigned int)(p0 >> 32) ^ c3 ^ k1;
    c1 = (unsigned int)p1;
    c3 = (unsigned int)p0;
    c0 = n0;
    c2 = n2;
  }
  return (float)(c0 >> 8) * (1.0f / 16777216.0f);
}
"""
