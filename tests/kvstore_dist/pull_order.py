"""dist_sync: a pull right after a push is posted without waiting for the
push's answer; the server holds it to the end of the round, so it gives the
round's sum even when the other worker pushes late.  A pull before a push
gives the value before that round (the key's requests leave in call order),
and so does a pull into the array the next push reads."""
import time

import numpy as np

import mx
from common import report

kv = mx.kv.create("dist_sync")
shape = (4, 3)
kv.init(0, mx.nd.zeros(shape))
kv.init(1, mx.nd.zeros((1_500_000,)))    # two 4 MiB transfer chunks

# Round 1: worker 1 pushes late; worker 0 pulls at once after its push.
if kv.rank == 1:
    time.sleep(1.0)
kv.push(0, mx.nd.ones(shape) * (kv.rank + 1))
held = mx.nd.zeros(shape)
kv.pull(0, out=held)
first = held.asnumpy().tolist()                       # 1 + 2

# A pull before a push: the stored value, not the coming round's.
before, after = mx.nd.zeros(shape), mx.nd.zeros(shape)
kv.pull(0, out=before)
kv.push(0, mx.nd.ones(shape) * 10 * (kv.rank + 1))
kv.pull(0, out=after)
# Pulled into the array the next push reads: the push sends the pulled value.
reused = mx.nd.zeros(shape)
kv.pull(0, out=reused)
kv.push(0, reused)
kv.pull(0, out=reused)
rounds = [before.asnumpy().tolist(), after.asnumpy().tolist(), reused.asnumpy().tolist()]

# A key of several chunks, pushed and pulled three rounds without waiting.
big = mx.nd.array(np.arange(1_500_000, dtype=np.float32) % 7)
outs = []
for step in range(3):
    kv.push(1, big * (kv.rank + 1) + step)
    out = mx.nd.zeros(big.shape)
    kv.pull(1, out=out)
    outs.append(out)
expected = [(np.arange(1_500_000, dtype=np.float32) % 7) * 3 + 2 * step for step in range(3)]
big_ok = [bool((o.asnumpy() == e).all()) for o, e in zip(outs, expected)]

report(kv, first=first, rounds=rounds, big_ok=big_ok,
       shared=[kv._keys[k].shared[0] is not None for k in (0, 1)])
