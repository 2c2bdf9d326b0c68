"""Shared by the scripts the mpi-marked tests launch: the store, and a
report line the test reads (one JSON object per worker on stdout)."""
import json
import sys

import mx


def create(name):
    kv = getattr(mx, "kv", None)
    if kv is not None and hasattr(kv, "create"):
        return kv.create(name)
    from mx_kvstore._dist import create as create_dist   # before mx.kv lands
    return create_dist(name)


def report(kv, **fields):
    print("REPORT " + json.dumps(dict(rank=kv.rank, num_workers=kv.num_workers, **fields)),
          flush=True)
    sys.stdout.flush()
