"""A server's row_sparse requests (MXNet's DataHandleRowSparse), beside
the dense ones of _server.py, whose storage, rounds, answers and deadlines
they share.

A key's slice stays dense on the server (whole rows).  A row push carries
only the rows present: in sync mode the server waits for every worker's
push of the key (each is one, with no rows if a worker has none), then
either stores the sum (rows nobody pushed become 0, as MXNet's CopyFromTo
of the merged row_sparse value; in place, clearing only the rows the last
sum wrote) or hands the updater a row_sparse gradient
of the rows pushed and the stored value as (rows, row length): the
optimizer's lazy update touches those rows only.  In async mode each push
updates at once.  A row pull sends back only the rows asked for.
"""
import numpy as np

from mx_kvstore import _dist_rows as rows
from mx_kvstore import _dist_wire as wire


def _message(server, rank, head, entry, with_values, then):
    """Receives the request's row message (sizes checked first), then
    ``then(row_len, ids, values)``; a bad message is answered with its error."""
    key, count = int(head[wire.KEY]), int(head[wire.ARG])
    nbytes = int(head[wire.NBYTES])
    size, dtype = entry.view.size, entry.view.dtype
    what = f"kvstore: {wire.OP_NAMES[int(head[wire.OP])]} of key {server._user_key(key)}"
    limit = rows.max_bytes(count, size, dtype.itemsize)
    if count > size or nbytes > limit:
        server._answer(rank, head, error=f"{what}: {count} rows in {nbytes} bytes do not fit "
                                         f"the stored slice of {size} elements")
        return
    buf = np.empty(nbytes, np.uint8)

    def landed():
        try:
            row_len, ids, values = rows.unpack(buf, count, dtype, size, with_values)
        except ValueError as exc:
            server._answer(rank, head, error=f"{what}: {exc}")
            return
        then(row_len, ids, values)
    server._receive(rank, head, buf, then=landed)


def on_push(server, rank, head):
    entry = server._entry(rank, head)
    if entry is not None:
        _message(server, rank, head, entry, True,
                 lambda row_len, ids, values: _pushed(server, rank, head, entry, row_len,
                                                      ids, values))


def _pushed(server, rank, head, entry, row_len, ids, values):
    key = int(head[wire.KEY])
    if not server.sync:
        if server.updater is None:
            server._answer(rank, head, error=(
                "kvstore: dist_async needs an optimizer on the servers "
                "(kv.set_optimizer) before the first push"))
            return
        _update(server, key, entry, row_len, [(ids, values)])
        server._hold_or_answer(key, rank, head)
        return
    from mx_kvstore._server import _Round
    round_ = server.rounds.get(key)
    if round_ is None:
        round_ = server.rounds[key] = _Round(1, early=False)  # answered whole, at the end
        round_.rows = True
    elif not getattr(round_, "rows", False):
        server._answer(rank, head, error=(
            f"kvstore: key {server._user_key(key)}: a row_sparse push joined a round of "
            f"dense pushes (every worker must push the same storage type)"))
        return
    round_.arrived[rank] = (head, (ids, values))
    if len(round_.arrived) < server.layout.num_workers:
        return
    del server.rounds[key]
    pushes = [push for _, push in round_.arrived.values()]
    if server.updater is None:
        _store_sum(server, entry, row_len, pushes)
    else:
        _update(server, key, entry, row_len, pushes)
    for worker, (h, _) in round_.arrived.items():
        server._answer(worker, h)


def _store_sum(server, entry, row_len, pushes):
    """The stored slice becomes the sum of the pushes (rows nobody pushed:
    0), in place once the pulls reading it left.  Only the rows the last
    sum wrote are cleared (``rows_held``; all of them after an init or an
    update), so a round costs the rows pushed, not the slice."""
    server._wait_sends(entry.sends)
    grid = entry.view.reshape(-1, row_len)
    held = getattr(entry, "rows_held", None)
    if held is None:
        grid.fill(0)
    else:
        grid[held] = 0
    ids, summed = rows.sum_rows(pushes, row_len, entry.view.dtype)
    grid[ids] = summed
    entry.rows_held = ids


def _update(server, key, entry, row_len, pushes):
    """The updater on the stored slice as (rows, row_len), with the row_sparse
    sum of ``pushes`` as the gradient."""
    from mx_ndarray import sparse
    ids, summed = rows.sum_rows(pushes, row_len, entry.view.dtype)
    shape = (entry.view.size // row_len, row_len)
    grad = sparse.row_sparse_array((summed, ids), shape=shape, dtype=entry.view.dtype)
    server._wait_sends(entry.sends)
    weight = entry.nd.reshape(shape)
    server.updater(server._user_key(key), grad, weight)
    weight.wait_to_read()
    entry.rows_held = None          # the weight's rows are all live now


def on_pull(server, rank, head):
    entry = server._entry(rank, head)
    if entry is not None:
        _message(server, rank, head, entry, False,
                 lambda row_len, ids, _: _send_rows(server, rank, head, entry, row_len, ids))


def _send_rows(server, rank, head, entry, row_len, ids):
    # A copy of the rows asked for: the stored value may change while they leave
    # (the send keeps its buffer alive).
    picked = np.take(entry.view.reshape(-1, row_len), ids, axis=0)
    server._answer(rank, head)
    server._send_data(rank, head, picked.reshape(-1), [])
