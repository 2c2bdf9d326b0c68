"""GPU compute of dot and batch_dot: GEMM through cuBLAS by way of
cupy.matmul, over transposed views rather than transposed copies, with the
M, N, K of _dot_cpu.pyx.  float16 runs in float32 as on the CPU (the sum
with the old output too, for req 'add'), so both devices round alike.
Importing this module without CuPy raises ImportError."""
import math

import cupy


def compile_cases():
    """No kernel source of ours: cuBLAS does the work."""
    return []


def _gemm(a, b, out, add):
    """out (+)= a @ b over (batch of) 2-d views."""
    if out.dtype == cupy.float16:
        r = cupy.matmul(a.astype(cupy.float32), b.astype(cupy.float32))
        if add:
            r += out.astype(cupy.float32)
        out[...] = r.astype(cupy.float16)
    elif add:
        out += cupy.matmul(a, b)
    else:
        cupy.matmul(a, b, out=out)


def dot(params, inputs, outputs, reqs):
    if reqs[0] == "null":
        return
    l, r, out = inputs[0], inputs[1], outputs[0]
    ta, tb = params["transpose_a"], params["transpose_b"]
    if l.ndim == 1 and r.ndim == 1:          # vector . vector -> shape (1,)
        m, n, k = 1, 1, l.shape[0]
    else:
        k = l.shape[0] if ta else l.shape[-1]
        m = math.prod(l.shape[1:] if ta else l.shape[:-1])
        n = math.prod(r.shape[:-1] if tb else r.shape[1:])
    a = l.reshape(k, m).T if ta else l.reshape(m, k)
    b = r.reshape(n, k).T if tb else r.reshape(k, n)
    _gemm(a, b, out.reshape(m, n), reqs[0] == "add")


def batch_dot(params, inputs, outputs, reqs):
    if reqs[0] == "null":
        return
    l, r, out = inputs[0], inputs[1], outputs[0]
    batch = math.prod(l.shape[:-2])
    a = l.reshape((batch,) + l.shape[-2:])
    b = r.reshape((batch,) + r.shape[-2:])
    if params["transpose_a"]:
        a = a.swapaxes(1, 2)
    if params["transpose_b"]:
        b = b.swapaxes(1, 2)
    _gemm(a, b, out.reshape((batch,) + out.shape[-2:]), reqs[0] == "add")
