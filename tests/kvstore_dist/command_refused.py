"""A command a server refuses leaves the store usable: an optimizer
registered by the script (after ``import mx``, which a server never gets
past) is unknown to the servers, so set_optimizer fails on worker 0 alone,
once; SGD set afterwards then updates the pushed sums."""
import mx
from common import report

kv = mx.kv.create("dist_sync")
kv.init(0, mx.nd.zeros((4,)))


@mx.optimizer.register
class ScriptOnlySGD(mx.optimizer.SGD):
    """Known to the workers only."""


refused = None
try:
    kv.set_optimizer(ScriptOnlySGD(learning_rate=0.1))
except mx.MXNetError as exc:
    refused = [type(exc).__name__, str(exc)]
kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.5))
out = mx.nd.zeros((4,))
kv.pushpull(0, mx.nd.ones((4,)), out=out)
report(kv, refused=refused, value=out.asnumpy().tolist())
