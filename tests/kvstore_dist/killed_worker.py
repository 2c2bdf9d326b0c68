"""Worker 1 kills itself (SIGKILL) after one round; worker 0's next round
must fail within MXNET_KVSTORE_TIMEOUT naming worker 1, and the launcher
must name rank 1 as the rank that died."""
import os
import signal
import time

import mx
from common import report

kv = mx.kv.create("dist_sync")
kv.init(0, mx.nd.zeros((4,)))
out = mx.nd.zeros((4,))
kv.pushpull(0, mx.nd.ones((4,)), out=out)
out.wait_to_read()
if kv.rank == 1:
    os.kill(os.getpid(), signal.SIGKILL)
time.sleep(0.5)
start = time.monotonic()
try:
    kv.pushpull(0, mx.nd.ones((4,)), out=out)
    out.wait_to_read()
    report(kv, error=None)
except mx.MXNetError as exc:
    report(kv, error=str(exc), after=time.monotonic() - start)
    raise
