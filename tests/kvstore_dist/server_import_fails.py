"""A server rank that cannot import its own code (a broken install, say):
``import mx`` raises there.  The server must tell the workers and exit at
once (not sit in MPI_Finalize until the job's timeout); the workers'
``mx.kv.create`` must raise naming the server and the ImportError."""
import sys
import time

from mpi4py import MPI

if MPI.COMM_WORLD.Get_rank() >= 2:          # the launcher's ranks: 2 workers, then servers
    sys.modules["mx_kvstore._server"] = None    # import of it raises ImportError

import mx  # noqa: E402
from common import report  # noqa: E402

start = time.monotonic()
error = None
try:
    kv = mx.kv.create("dist_sync")      # its first barrier waits for the servers
except mx.MXNetError as exc:
    error = [type(exc).__name__, str(exc)]
# the report names this worker by hand: the store was never made
report(type("Worker", (), {"rank": MPI.COMM_WORLD.Get_rank(), "num_workers": 2}),
       error=error, after=time.monotonic() - start)
