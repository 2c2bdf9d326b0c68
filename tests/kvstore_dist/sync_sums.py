"""dist_sync without an optimizer: a pull gives the sum of every worker's
push (each worker pushes rank+1 times a ramp, plus a list of two device
values for key 4), several rounds; then SGD on the servers
(server_sgd.py).  KV_TYPE names the store (default 'dist_sync'; MXNet's
'dist' is the same sync store)."""
import os

import numpy as np

import mx
import server_sgd
from common import report

kv = mx.kv.create(os.environ.get("KV_TYPE", "dist_sync"))
shape = (3, 5)
ramp = np.arange(15, dtype=np.float32).reshape(shape)
kv.init(3, mx.nd.array(ramp))
kv.init(4, mx.nd.zeros(shape))
results = []
for step in range(3):
    kv.push(3, mx.nd.array(ramp * (kv.rank + 1) + step))
    kv.push(4, [mx.nd.ones(shape) * kv.rank, mx.nd.ones(shape) * step])
    out, outs = mx.nd.zeros(shape), [mx.nd.zeros(shape), mx.nd.zeros(shape)]
    kv.pull(3, out=out)
    kv.pull(4, out=outs)
    results.append([out.asnumpy().tolist(), outs[0].asnumpy().tolist(),
                    outs[1].asnumpy().tolist()])
pp = mx.nd.ones(shape) * (kv.rank + 1)
kv.pushpull(3, pp)
results.append(pp.asnumpy().tolist())
# A value of several transfer chunks (wire.CHUNK_BYTES), summed and
# answered chunk by chunk: push + pull, then pushpull.
big = (np.arange(2_800_003) % 1000).astype(np.float32)
kv.init(5, mx.nd.zeros(big.shape))
kv.push(5, mx.nd.array(big * (kv.rank + 1)))
got = mx.nd.zeros(big.shape)
kv.pull(5, out=got)
chunked = [bool((got.asnumpy() == big * 3).all())]
pushed = mx.nd.array(big + kv.rank)
kv.pushpull(5, pushed)
chunked.append(bool((pushed.asnumpy() == big * 2 + 1).all()))

match, moved, weights = server_sgd.check(kv)
report(kv, results=results, type=kv.type,
       shared=[kv._keys[k].shared[0] is not None for k in (3, 5)], match=match, moved=moved, weights=weights,
       chunked=chunked)
