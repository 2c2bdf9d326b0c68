"""row_sparse on dist_async: each push of rows updates the servers' value
at once (SGD, lr 1: w -= g, in any order), so after every worker's pushes
and a barrier, a row_sparse_pull gives the initial value minus the sum of
every push.  Then the errors: a dense value pushed to a row_sparse key is
refused at the call, a row id outside the key at the pull's wait."""
import numpy as np

import mx
from common import report
from rows_data import COLS, INIT, ROWS, push_of

kv = mx.kv.create("dist_async")
kv.set_optimizer(mx.optimizer.SGD(learning_rate=1.0))
kv.init(5, mx.nd.array(INIT).tostype("row_sparse"))
for step in (1, 2, 3):
    rows, values = push_of(kv.rank, step)
    kv.push(5, mx.nd.sparse.row_sparse_array((values, rows), shape=(ROWS, COLS)))
mx.nd.waitall()             # every push answered (applied), then every worker's
kv._barrier()
out = mx.nd.sparse.zeros("row_sparse", (ROWS, COLS))
kv.row_sparse_pull(5, out=out, row_ids=mx.nd.arange(ROWS))
final = out.asnumpy().tolist()

errors = []
try:
    kv.push(5, mx.nd.ones((ROWS, COLS)))
except mx.base.MXNetError as exc:
    errors.append(str(exc))
bad = mx.nd.sparse.zeros("row_sparse", (ROWS, COLS))
kv.row_sparse_pull(5, out=bad, row_ids=mx.nd.array([3, ROWS]))
try:
    bad.wait_to_read()
except mx.base.MXNetError as exc:
    errors.append(str(exc))
report(kv, final=final, errors=errors)
