"""What row_sparse.py's workers push, shared with the test's NumPy
statement of the results: each worker's rows and values per step, from a
seed of (rank, step), so every process can recompute every push."""
import numpy as np

ROWS, COLS = 50, 3
INIT = np.arange(ROWS * COLS, dtype=np.float32).reshape(ROWS, COLS) / 10


def push_of(rank, step):
    """(sorted distinct rows, their values) worker ``rank`` pushes at ``step``:
    at odd steps every worker pushes rows 7 and 31 (on both servers of a
    split key: the servers must sum them), worker 1 pushes no rows at step 2."""
    rng = np.random.RandomState(1000 * step + rank)
    count = int(rng.randint(0, 9)) if step != 2 or rank != 1 else 0
    rows = set(rng.choice(ROWS, size=count, replace=False).tolist())
    if step % 2:
        rows |= {7, 31}
    rows = np.array(sorted(rows), np.int64)
    return rows, rng.randn(len(rows), COLS).astype(np.float32)


def dense(rows, values):
    out = np.zeros((ROWS, COLS), np.float32)
    out[rows] = values
    return out


def summed(step, workers):
    """The sum of every worker's push at ``step``, dense (rows nobody pushed: 0)."""
    return sum(dense(*push_of(rank, step)) for rank in range(workers))
