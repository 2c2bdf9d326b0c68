"""row_sparse values on dist_sync (MXNet's PushRowSparse / PullRowSparse):
a key initialised row_sparse, pushes of a few rows per worker (summed on the
servers; rows nobody pushed become 0), row_sparse_pull of row sets in any
order with repeats (Hypothesis: every pull against the NumPy sum), then
SGD on the servers: the lazy update of the pushed rows, against
mx.nd.sgd_update on the same rows.  The test runs it with one server and
with two (a split key: each server holds whole rows)."""
import numpy as np

import mx
from common import report
from rows_data import COLS, INIT, ROWS, push_of, summed

kv = mx.kv.create("dist_sync")
W = kv.num_workers
kv.init(3, mx.nd.array(INIT).tostype("row_sparse"))


def rsp(rows, values):
    return mx.nd.sparse.row_sparse_array((values, rows), shape=(ROWS, COLS))


def pull_rows(row_ids, dtype="int64", key=3):
    out = mx.nd.sparse.zeros("row_sparse", (ROWS, COLS))
    kv.row_sparse_pull(key, out=out, row_ids=mx.nd.array(row_ids, dtype=dtype))
    return out


everything = pull_rows(np.arange(ROWS)[::-1])         # the init value, rows reversed
pulled = [everything.asnumpy().tolist()]
for step in (1, 2):
    kv.push(3, rsp(*push_of(kv.rank, step)))
    out = pull_rows(np.concatenate([np.arange(ROWS), [3, 3, 0]]))
    pulled.append(out.asnumpy().tolist())
kv._barrier()

# Random row sets against the last sum, row ids of several dtypes, and a
# dense pull of the key (not on MXNet 1.9.1, whose dist pull refuses a
# row_sparse key, and whose reference venv has no Hypothesis).
expected = summed(2, W)
examples, dense_pulled = [], None
if mx.__name__ == "mx":
    from hypothesis import given, settings, strategies as st

    @settings(max_examples=25, deadline=None, database=None, derandomize=True)
    @given(st.lists(st.integers(0, ROWS - 1), max_size=20),
           st.sampled_from(["int64", "int32", "float32"]))
    def check_pull(row_ids, dtype):
        out = pull_rows(np.array(row_ids, dtype=np.int64), dtype)
        wanted = np.unique(np.array(row_ids, dtype=np.int64))
        np.testing.assert_array_equal(out.indices.asnumpy(), wanted)
        np.testing.assert_array_equal(out.data.asnumpy(), expected[wanted])
        np.testing.assert_array_equal(out.asnumpy(), np.where(
            np.isin(np.arange(ROWS), wanted)[:, None], expected, 0))
        examples.append(len(wanted))

    check_pull()
    dense_out = mx.nd.zeros((ROWS, COLS))
    kv.pull(3, out=dense_out)
    dense_pulled = dense_out.asnumpy().tolist()
kv._barrier()

# SGD on the servers: lazy_update (MXNet's default) updates the pushed rows
# only.  A new key with every row: MXNet's server stores key 3's last sum as
# the rows pushed, and its SGD refuses a weight that lacks rows.
sgd = dict(learning_rate=0.1, wd=0.05, rescale_grad=0.5)
kv.set_optimizer(mx.optimizer.SGD(**sgd))
kv.init(4, mx.nd.array(INIT).tostype("row_sparse"))
weight = mx.nd.array(INIT)
match = []
for step in (3, 4):
    kv.push(4, rsp(*push_of(kv.rank, step)))
    grads = [rsp(*push_of(rank, step)) for rank in range(W)]
    merged = mx.nd.add_n(*grads) if W > 1 else grads[0]
    mx.nd.sgd_update(weight, merged, out=weight, lr=sgd["learning_rate"], wd=sgd["wd"],
                     rescale_grad=sgd["rescale_grad"], lazy_update=True)
    got = pull_rows(np.arange(ROWS), key=4).asnumpy()
    match.append(bool(np.array_equal(got, weight.asnumpy())))
report(kv, pulled=pulled, examples=examples, dense=dense_pulled,
       sgd=got.tolist(), match=match)
