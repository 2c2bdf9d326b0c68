"""dist_sync with the workers summing (the test sets MXNET_KVSTORE_SHM_MIN_BYTES
and _REDUCE_BYTES to 0): after one round, the worker that owns the key's
chunk stops (SIGSTOP) when the server tells it to sum, after its push
arrived; the other worker's wait must fail within MXNET_KVSTORE_TIMEOUT
naming the owner (every push of the round arrived: the owner is missing
all the same)."""
import os
import signal
import time

import mx
from common import report
from mx_kvstore import _dist_shm, _dist_shm_transfer

kv = mx.kv.create("dist_sync")
kv.init(0, mx.nd.zeros((4,)))
out = mx.nd.zeros((4,))
kv.pushpull(0, mx.nd.ones((4,)), out=out)
out.wait_to_read()
state = kv._keys[0]
owner = _dist_shm.owner(state.parts[0][1], 0, kv.num_workers)
if kv.rank == owner:
    def stop(self, i, b, out):
        os.kill(os.getpid(), signal.SIGSTOP)
        time.sleep(60)      # the signal may land a moment later: never report the chunk
    _dist_shm_transfer.ShmTransfer._sum = stop
start = time.monotonic()
kv.pushpull(0, mx.nd.ones((4,)), out=out)
try:
    out.wait_to_read()
    report(kv, error=None, owner=owner)
except mx.MXNetError as exc:
    report(kv, error=str(exc), after=time.monotonic() - start, owner=owner)
    raise
