"""Shared by the scripts the mpi-marked tests launch: a report the test
reads (one JSON object per worker).

With ``KV_REPORT_DIR`` set (the tests set it) each worker writes
``rank<N>.json`` there: mpiexec forwards the ranks' stdout in pieces, so
two long report lines printed at once can interleave.  Without it (the
MXNet reference script) the report is a ``REPORT`` line on stdout."""
import json
import os
import sys


def report(kv, **fields):
    text = json.dumps(dict(rank=kv.rank, num_workers=kv.num_workers, **fields))
    where = os.environ.get("KV_REPORT_DIR")
    if where:
        path = os.path.join(where, f"rank{kv.rank}.json")
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.replace(path + ".tmp", path)
        return
    print("REPORT " + text, flush=True)
    sys.stdout.flush()
