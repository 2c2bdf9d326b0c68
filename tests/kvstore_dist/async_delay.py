"""dist_async with SGD on the server and MXNET_KVSTORE_MAX_DELAY=1.

Key "slow" (bounded delay): worker 1 is slow (sleeps before each push) and
pushes 100, worker 0 pushes 1; with lr=1 the weight is -(pushes of worker
0 + 100 * pushes of worker 1), so the value worker 0 pulls after its k-th
pushpull shows how many pushes worker 1 had made: never fewer than k - 1.
Key "quad" (convergence): each worker pushes the gradient of |w - target|^2 / 2
at the weight it last pulled; the weight reaches the target."""
import time

import numpy as np

import mx
from common import report

kv = mx.kv.create("dist_async")
kv.init(["slow", "quad"], [mx.nd.zeros((1,)), mx.nd.zeros((6,))])
kv.set_optimizer(mx.optimizer.SGD(learning_rate=1.0))
steps = 6
seen = []
for k in range(1, steps + 1):
    if kv.rank == 1:
        time.sleep(0.15)
    out = mx.nd.zeros((1,))
    kv.pushpull("slow", mx.nd.ones((1,)) * (1 if kv.rank == 0 else 100), out=out)
    seen.append(float(out.asnumpy()[0]))
kv.barrier()

kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.2))
target = np.linspace(-2, 3, 6).astype(np.float32)
w = mx.nd.zeros((6,))
for _ in range(40):
    kv.pushpull("quad", w - mx.nd.array(target), out=w)
kv.barrier()
kv.pull("quad", out=w)
report(kv, seen=seen, final=w.asnumpy().tolist(), target=target.tolist())
