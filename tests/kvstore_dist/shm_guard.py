"""dist_sync through shared memory: the server does not sum a round into
the value buffer a worker still copies an earlier answer out of.

Worker 1 copies its first pull's answer out one second late (on a thread
of its own, so its next pushes and pulls go on meanwhile); the third round
sums into the buffer that answer lives in, and must wait for the copy."""
import threading
import time

import numpy as np

import mx
from common import report
from mx_kvstore import _dist

kv = mx.kv.create("dist_sync")
n = 300_000                 # 1.2 MB: a few pages of one chunk
kv.init(0, mx.nd.zeros((n,)))
late = np.zeros(n, np.float32)
copiers = []

if kv.rank == 1:
    original = _dist.KVStoreDist._shared

    def late_first_pull(self, seg, skey, src=None, into=None):
        if into is None:
            return original(self, seg, skey, src, into)
        _dist.KVStoreDist._shared = original      # only the first pull is late
        transfer, flags = original(self, seg, skey, src, late)
        on_token = transfer.on_token

        def later(token):
            def copy():
                time.sleep(1.0)
                on_token(token)
            copiers.append(threading.Thread(target=copy))
            copiers[-1].start()
        transfer.on_token = later
        return transfer, flags
    _dist.KVStoreDist._shared = late_first_pull

outs = []
for scale in (1, 10, 100):
    kv.push(0, mx.nd.ones((n,)) * scale * (kv.rank + 1))
    out = mx.nd.zeros((n,))
    kv.pull(0, out=out)
    outs.append(out)
values = [float(o.asnumpy()[0]) for o in outs[1:]]
for t in copiers:
    t.join()
report(kv, shared=kv._keys[0].shared[0] is not None, values=values,
       late=sorted(set(late.tolist())) if kv.rank == 1 else None)
