"""Row-major (strided-batched) GEMM through CuPy's cuBLAS binding, for
FullyConnected and Convolution on the GPU: gemm_rm of conv_cpu.h with a
batch and a beta.  cupy.matmul cannot serve here: it has no beta (the
weight gradient accumulates over the batch), and it copies transposed
operands to contiguous ones first.  The binding sets the current stream on
the handle before each call.  Importing this module without CuPy raises
ImportError."""
import numpy
from cupy.cuda import device

_INT_MAX = 2**31 - 1


def compile_cases():
    """No kernel source of ours: cuBLAS does the work."""
    return []


def gemm(ta, tb, m, n, k, a, b, c, beta, batch=1, strides=(0, 0, 0)):
    """Row-major ``c[i] = op(a[i]) @ op(b[i]) + beta * c[i]`` for i < batch:
    op(a[i]) is m x k (a[i] is stored k x m when ``ta``), op(b[i]) is k x n,
    c[i] is m x n; every matrix is contiguous, a[i] starts ``strides[0]``
    items after a[i - 1] (b, c likewise).  float32 or float64; ``beta`` 0
    or 1."""
    if m == 0 or n == 0 or batch == 0:
        return
    if k == 0:                  # an empty sum: cuBLAS is not asked about k = 0
        if beta == 0:
            c.fill(0)
        return
    if max(m, n, k, batch) > _INT_MAX:
        raise ValueError(f"gemm: sizes {m} x {n} x {k} (batch {batch}) exceed cuBLAS's int")
    from cupy_backends.cuda.libs import cublas
    fn = cublas.sgemmStridedBatched if c.dtype == numpy.float32 else cublas.dgemmStridedBatched
    one, bet = numpy.array(1, c.dtype), numpy.array(beta, c.dtype)
    t, no = cublas.CUBLAS_OP_T, cublas.CUBLAS_OP_N
    handle = device.get_cublas_handle()
    mode = cublas.getPointerMode(handle)
    cublas.setPointerMode(handle, cublas.CUBLAS_POINTER_MODE_HOST)
    try:
        # Column-major c^T = op(b)^T op(a)^T: no data is transposed.
        fn(handle, t if tb else no, t if ta else no, n, m, k, one.ctypes.data,
           b.data.ptr, k if tb else n, strides[1],
           a.data.ptr, m if ta else k, strides[0],
           bet.ctypes.data, c.data.ptr, n, strides[2], batch)
    finally:
        cublas.setPointerMode(handle, mode)
