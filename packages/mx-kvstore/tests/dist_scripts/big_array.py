"""A value above MXNET_KVSTORE_BIGARRAY_BOUND is split over the servers:
pushes and pulls still give the sum of the workers' values, element for
element (and a small key lives whole on one server)."""
import numpy as np

import mx
from common import create, report
from mx_kvstore import _dist_keys

kv = create("dist_sync")
n = 1001          # the test sets the bound to 100 elements
base = np.arange(n, dtype=np.float32)
kv.init(7, mx.nd.zeros((n,)))
kv.init(8, mx.nd.zeros((10,)))
kv.push(7, mx.nd.array(base * (kv.rank + 1)))
kv.push(8, mx.nd.ones((10,)) * (kv.rank + 1))
out, small = mx.nd.zeros((n,)), mx.nd.zeros((10,))
kv.pull(7, out=out)
kv.pull(8, out=small)
report(kv, big=out.asnumpy().tolist(), small=small.asnumpy().tolist(),
       parts=[list(p[::2]) + [p[3]] for p in _dist_keys.partition(7, n, 2, _dist_keys.bigarray_bound())])
