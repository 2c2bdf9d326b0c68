"""The servers' SGD cannot update an int32 key (its update operator takes
floating point weights only): the server holding key 3 raises inside its
updater at the end of the first round.  Each worker's waiting call must
fail within a second or so naming the server, the key and the error, the
worker's later calls must raise KVStoreError at once, and the launcher
must name the server's rank."""
import time

import mx
from common import report

kv = mx.kv.create("dist_sync")
kv.init(3, mx.nd.zeros((4,), dtype="int32"))
kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1))
out = mx.nd.zeros((4,), dtype="int32")
start = time.monotonic()
errors = {}
try:
    kv.pushpull(3, mx.nd.ones((4,), dtype="int32"), out=out)
    out.wait_to_read()
except mx.MXNetError as exc:
    errors["wait"] = str(exc)
after = time.monotonic() - start
for name, call in (("push", lambda: kv.push(3, mx.nd.ones((4,), dtype="int32"))),
                   ("barrier", kv.barrier)):
    try:
        call()
    except mx.MXNetError as exc:
        errors[name] = [type(exc).__name__, str(exc)]
report(kv, errors=errors, after=after)
