"""A value above MXNET_KVSTORE_BIGARRAY_BOUND is split over the servers:
pushes and pulls still give the sum of the workers' values, element for
element (and a small key lives whole on one server).  Then 2bit
compression on the wire: two pushes of a split key, each worker's values
quantised with error feedback; the pulls are reported for the test's
NumPy statement of MXNet's formula."""
import numpy as np

import mx
from common import report
from mx_kvstore import _dist_keys

kv = mx.kv.create("dist_sync")
n = 1001          # the test sets the bound to 100 elements
base = np.arange(n, dtype=np.float32)
kv.init(7, mx.nd.zeros((n,)))
kv.init(8, mx.nd.zeros((10,)))
kv.push(7, mx.nd.array(base * (kv.rank + 1)))
kv.push(8, mx.nd.ones((10,)) * (kv.rank + 1))
out, small = mx.nd.zeros((n,)), mx.nd.zeros((10,))
kv.pull(7, out=out)
kv.pull(8, out=small)
parts = [list(p[::2]) + [p[3]]
         for p in _dist_keys.partition(7, n, 2, _dist_keys.bigarray_bound())]

kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
kv.init(9, mx.nd.zeros((n,)))
pulled = []
for step in range(2):
    grad = np.sin(base * 0.37 * (kv.rank + 1) + step).astype(np.float32) * 0.8
    kv.push(9, mx.nd.array(grad))
    got = mx.nd.zeros((n,))
    kv.pull(9, out=got)
    pulled.append(got.asnumpy().tolist())
report(kv, big=out.asnumpy().tolist(), small=small.asnumpy().tolist(), parts=parts,
       compressed=pulled)
