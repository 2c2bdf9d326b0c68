"""dist_sync through shared memory with the workers summing (the test sets
MXNET_KVSTORE_SHM_REDUCE_BYTES): keys of several dtypes and of one and of
several transfer chunks, pushpull and push + pull, a list of two device
values, three rounds, then a big key split over two servers.  Each worker
reports what it pulled, the chunks it summed itself, and the values it
pushed, so the test recomputes every sum in worker order."""
import os

import numpy as np

import mx
from common import report
from mx_kvstore import _dist_shm_transfer

summed = []
original = _dist_shm_transfer.ShmTransfer._sum


def counting_sum(self, i, b, out):
    summed.append([int(self.src.size), i, bool(out)])
    return original(self, i, b, out)


_dist_shm_transfer.ShmTransfer._sum = counting_sum

kv = mx.kv.create("dist_sync")
r = kv.rank
# (key, elements, dtype): one chunk; three chunks (4 MiB each) with a
# short last one; float16 and int32 over two chunks; a tiny float64 one.
keys = [(0, 1000, "float32"), (1, 2_600_001, "float32"), (2, 2_200_000, "float16"),
        (3, 1_100_000, "int32"), (4, 7, "float64")]
for key, n, dtype in keys:
    kv.init(key, mx.nd.zeros((n,), dtype=dtype))


def value(key, n, dtype, rank, step):
    """A worker's push: different per key, rank and step; exact in float16."""
    x = (np.arange(n, dtype=np.int64) * (key + 3) + 7 * rank + step) % 61 - 30
    return (x * (rank + 1)).astype(dtype)


pulled = []
for step in range(3):
    outs = []
    for key, n, dtype in keys:
        v = mx.nd.array(value(key, n, dtype, r, step), dtype=dtype)
        if step == 1:       # push (of two device values) then pull
            half = mx.nd.array(value(key, n, dtype, r, step) // 2, dtype=dtype)
            kv.push(key, [half, v - half])
            out = mx.nd.zeros((n,), dtype=dtype)
            kv.pull(key, out=out)
        else:               # pushpull into the pushed array itself, or another
            out = v if step == 0 else mx.nd.zeros((n,), dtype=dtype)
            kv.pushpull(key, v, out=out)
        outs.append(out)
    pulled.append([o.asnumpy().tolist()[:5] + o.asnumpy().tolist()[-5:] for o in outs])
    pulled[-1].append([bool(np.array_equal(o.asnumpy(), sum(
        value(k, n, d, w, step) for w in range(kv.num_workers)).astype(d)))
        for o, (k, n, d) in zip(outs, keys)])

report(kv, pulled=pulled, summed=summed,
       attached=[bool(kv._keys[k].shared[0].all_attached()) for k, _, _ in keys],
       reduce_bytes=os.environ.get("MXNET_KVSTORE_SHM_REDUCE_BYTES"))
