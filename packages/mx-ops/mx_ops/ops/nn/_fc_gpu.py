"""GPU compute of FullyConnected and _backward_FullyConnected, the GEMMs of
_fc_cpu.pyx through cuBLAS (mx_ops.ops.nn._blas_gpu) with the same M, K, N (the
FCParam block mx_ops.ops.nn.fully_connected packs): out = data . weight^T + bias,
the bias laid down first and the GEMM adding onto it for req 'write'.
Backward: dX = dY . W, dW = dY^T . X, db = column sums of dY in float64.
float32 and float64 only, as on the CPU.  Importing this module without
CuPy raises ImportError."""
import cupy
import numpy

from mx_ops.ops.nn._blas_gpu import gemm

_FC_T = numpy.dtype([("no_bias", "<i4"), ("pad", "<i4"), ("M", "<i8"), ("K", "<i8"),
                     ("N", "<i8")])      # FCParam of _fc_cpu.pyx


def compile_cases():
    """No kernel source of ours: cuBLAS does the work."""
    return []


def _sizes(pack, params, inputs):
    p = numpy.frombuffer(pack(params, [a.shape for a in inputs]), _FC_T)[0]
    return int(p["M"]), int(p["K"]), int(p["N"])


def forward(pack):
    """FullyConnected's compute; ``pack`` is the op's pack_params."""
    def run(params, inputs, outputs, reqs):
        if reqs[0] == "null":
            return
        m, k, n = _sizes(pack, params, inputs)
        x, w, out = inputs[0].reshape(m, k), inputs[1], outputs[0].reshape(m, n)
        add = reqs[0] == "add"
        if len(inputs) == 2:
            gemm(False, True, m, n, k, x, w, out, int(add))
        elif add:
            gemm(False, True, m, n, k, x, w, out, 1)
            out += inputs[2]
        else:
            out[...] = inputs[2]
            gemm(False, True, m, n, k, x, w, out, 1)
    return run


def backward(pack):
    """_backward_FullyConnected's compute: inputs (out_grad, data, weight),
    outputs (data_grad, weight_grad[, bias_grad])."""
    def run(params, inputs, outputs, reqs):
        m, k, n = _sizes(pack, params, inputs)
        dy, x, w = inputs[0].reshape(m, n), inputs[1].reshape(m, k), inputs[2]
        if reqs[0] != "null":
            gemm(False, False, m, k, n, dy, w, outputs[0].reshape(m, k),
                 int(reqs[0] == "add"))
        if reqs[1] != "null":
            gemm(True, False, n, k, m, dy, x, outputs[1], int(reqs[1] == "add"))
        if len(outputs) > 2 and reqs[2] != "null":
            db = outputs[2]
            s = dy.sum(axis=0, dtype=cupy.float64)
            if reqs[2] == "add":
                s += db           # summed in float64, then rounded once, as on the CPU
            db[...] = s.astype(db.dtype)
    return run
