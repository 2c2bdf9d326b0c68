"""Shared by the scripts the mpi-marked tests launch: each worker's report,
one JSON object.  Under the tests (MX_KV_REPORT_DIR set) it goes to a file
of its own: mpiexec forwards the ranks' stdout through one pipe, where two
ranks' long lines can interleave.  Otherwise it is a REPORT line on stdout
(tests/data/kvstore_dist/make_dist_reference.py reads those, one process per
pipe)."""
import json
import os
import sys


def report(kv, **fields):
    text = json.dumps(dict(rank=kv.rank, num_workers=kv.num_workers, **fields))
    folder = os.environ.get("MX_KV_REPORT_DIR")
    if folder:
        path = os.path.join(folder, f"rank-{kv.rank}.json")
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.replace(path + ".tmp", path)      # whole or absent, never half written
        return
    print("REPORT " + text, flush=True)
    sys.stdout.flush()
