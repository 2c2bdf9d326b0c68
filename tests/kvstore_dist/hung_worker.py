"""Worker 1 stops itself (SIGSTOP: alive but silent) after one round;
worker 0's next pull must fail within MXNET_KVSTORE_TIMEOUT naming worker 1."""
import os
import signal
import time

import mx
from common import report

kv = mx.kv.create("dist_sync")
kv.init(0, mx.nd.zeros((4,)))
kv.push(0, mx.nd.ones((4,)))
out = mx.nd.zeros((4,))
kv.pull(0, out=out)
out.wait_to_read()
if kv.rank == 1:
    os.kill(os.getpid(), signal.SIGSTOP)
start = time.monotonic()
kv.push(0, mx.nd.ones((4,)))
kv.pull(0, out=out)
try:
    out.wait_to_read()
    report(kv, error=None)
except mx.MXNetError as exc:
    report(kv, error=str(exc), after=time.monotonic() - start)
    raise
