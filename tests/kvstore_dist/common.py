"""Shared by the scripts the mpi-marked tests launch: a report line the
test reads (one JSON object per worker on stdout)."""
import json
import sys


def report(kv, **fields):
    print("REPORT " + json.dumps(dict(rank=kv.rank, num_workers=kv.num_workers, **fields)),
          flush=True)
    sys.stdout.flush()
