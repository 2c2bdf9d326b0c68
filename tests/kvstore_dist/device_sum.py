"""dist_sync_device: a key's values (one per device) are summed on the
first value's device before they are sent, and a pull lands in every
device's out; a row_sparse key with a value per device the same way.
With KV_GPU=1 the devices are [gpu(0), cpu(0)] (the sum is made on the
GPU), else [cpu(1), cpu(0)].  Then KVStoreServer's controller: command 0
sets the servers' optimizer from its JSON, another command is printed by
every server."""
import os

import numpy as np

import mx
from common import report

kv = mx.kv.create("dist_sync_device")
devices = [mx.gpu(0), mx.cpu(0)] if os.environ.get("KV_GPU") else [mx.cpu(1), mx.cpu(0)]
shape = (4, 6)
ramp = np.arange(24, dtype=np.float32).reshape(shape)
kv.init(0, mx.nd.zeros(shape))
sums, contexts = [], []
for step in range(2):
    kv.push(0, [mx.nd.array(ramp * (kv.rank + 1) * (i + 1) + step, ctx=d)
                for i, d in enumerate(devices)])
    outs = [mx.nd.zeros(shape, ctx=d) for d in devices]
    kv.pull(0, out=outs)
    sums.append([o.asnumpy().tolist() for o in outs])
    contexts.append([str(o.context) for o in outs])
pushed = [mx.nd.ones(shape, ctx=d) * (kv.rank + 1) for d in devices]
kv.pushpull(0, pushed)
pushpulled = [p.asnumpy().tolist() for p in pushed]

kv.init(1, mx.nd.sparse.zeros("row_sparse", (10, 2)))
ones = np.ones((2, 2), np.float32)
kv.push(1, [mx.nd.sparse.row_sparse_array((ones * (kv.rank + 1), [kv.rank, 5]), shape=(10, 2),
                                          ctx=devices[0]),
            mx.nd.sparse.row_sparse_array((ones * 10, [5, 9]), shape=(10, 2), ctx=devices[1])])
row_outs = [mx.nd.sparse.zeros("row_sparse", (10, 2), ctx=d) for d in devices]
kv.row_sparse_pull(1, out=row_outs, row_ids=[mx.nd.array([9, 0, 1, 5, 0], ctx=devices[0]),
                                             mx.nd.array([5], ctx=devices[1])])
rows = [[o.indices.asnumpy().tolist(), o.data.asnumpy().tolist(), str(o.context)]
        for o in row_outs]

if kv.rank == 0:
    kv._send_command_to_servers(0, mx.optimizer.SGD(learning_rate=0.5).to_json())
    kv._send_command_to_servers(7, "hello")
kv.barrier()
kv.init(2, mx.nd.ones(shape))
kv.push(2, [mx.nd.ones(shape, ctx=d) for d in devices])
updated = mx.nd.zeros(shape)
kv.pull(2, out=updated)
report(kv, sums=sums, contexts=contexts, pushpulled=pushpulled, rows=rows,
       updated=updated.asnumpy().tolist())
