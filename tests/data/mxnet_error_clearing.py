"""MXNet 1.9.1 reference for tests/test_async_error_clearing.py: run with
    OPENBLAS_CORETYPE=Haswell $MX_MXNET_PYTHON tests/data/mxnet_error_clearing.py
It printed (2026-11-26, mxnet 1.9.1): raised at d / c clean after d raised /
waitall clean / later write: [2. 1.]"""
import mxnet as mx
a = mx.nd.array([1.0, 2.0])
c = mx.nd.take(a, mx.nd.array([0, 5]), mode='raise')
d = c + 1
try:
    d.wait_to_read(); print("no raise at d")
except Exception as e: print("raised at d")
try:
    c.wait_to_read(); print("c clean after d raised")
except Exception as e: print("c still raises")
try:
    mx.nd.waitall(); print("waitall clean")
except Exception as e: print("waitall raises again")
mx.nd.take(a, mx.nd.array([1, 0]), mode='raise', out=c)
print("later write:", c.asnumpy())
