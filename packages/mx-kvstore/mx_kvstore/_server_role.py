"""How the ranks of a distributed job take their roles.

As in MXNet, every rank runs the user's unchanged script; a server rank
never gets past ``import mx``: the meta-package's last import calls
``join()``, which on a server rank serves until every worker has stopped
and then ends the process (exit status 0, or 1 after a failure).  On a
worker rank ``join()`` only records the job's layout; the store created by
``mx.kv.create('dist_sync')`` connects through it, and at exit the worker
tells the servers it stopped.

With ``MX_KVSTORE_STATUS_DIR`` set (the launcher sets it), each rank writes
``rank<N>.json`` when it joins and ``rank<N>.exit`` when it leaves, so the
launcher can name a rank that died without leaving.
"""
import atexit
import json
import os
import socket
import sys
import threading
import traceback

from mx_engine.base import MXNetError

from mx_kvstore import _dist_mpi
from mx_kvstore import _dist_wire as wire

DEFAULT_TIMEOUT = 300.0

_job = None
_lock = threading.Lock()


class _Job:
    def __init__(self, MPI, comm, layout):
        self.MPI, self.comm, self.layout = MPI, comm, layout
        self.client = None
        self.last_error = None


def timeout():
    """MXNET_KVSTORE_TIMEOUT: seconds a blocked call waits for a peer."""
    text = os.environ.get("MXNET_KVSTORE_TIMEOUT", str(DEFAULT_TIMEOUT))
    try:
        value = float(text)
    except ValueError:
        raise MXNetError(f"MXNET_KVSTORE_TIMEOUT={text!r}: expected seconds (a number > 0)") \
            from None
    if not value > 0:
        raise MXNetError(f"MXNET_KVSTORE_TIMEOUT={value}: must be > 0 seconds")
    return value


def _status(name, record):
    folder = os.environ.get("MX_KVSTORE_STATUS_DIR")
    if not folder or _job is None:
        return
    path = os.path.join(folder, f"rank{_job.layout.rank}.{name}")
    with open(path + ".tmp", "w") as f:
        json.dump(record, f)
    os.replace(path + ".tmp", path)


def _leave(code, error=None):
    """Records this rank's exit; after a failure ends the process at once
    (MPI_Finalize could wait forever on a dead peer)."""
    _status("exit", {"code": code, "error": error})
    if code != 0:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def join(serve=None):
    """Called at ``import mx``: takes this rank's role in a distributed job
    (nothing happens outside one).  A server rank runs ``serve()`` (the
    exit status; default: a ``Server`` of its own) and does not return."""
    global _job
    if _job is not None or not _dist_mpi.wants_distributed():
        return
    MPI = _dist_mpi.mpi()
    comm = MPI.COMM_WORLD.Dup()
    layout = _dist_mpi.Layout(MPI, comm)
    _job = _Job(MPI, comm, layout)
    role = "server" if layout.is_server else "worker"
    _status("json", {"pid": os.getpid(), "host": socket.gethostname(), "role": role,
                     "describe": layout.describe(layout.rank)})
    if layout.is_server:
        try:
            # inside the try: a server that cannot even import its code
            # tells the workers and exits (not MPI_Finalize, which would wait)
            from mx_kvstore._server import Server
            code = (serve() if serve is not None
                    else Server(MPI, comm, layout, timeout()).serve())
        except BaseException as exc:
            # The workers must not wait for a server that is gone.
            from mx_kvstore._dist_transport import send_abort
            send_abort(MPI, comm, layout.workers, f"kvstore: {layout.describe(layout.rank)} "
                                                  f"failed: {type(exc).__name__}: {exc}")
            _leave(1, traceback.format_exc())
        _leave(code, None if code == 0 else
               _job.last_error or "a worker failed (see the workers' errors)")
        raise SystemExit(code)
    _watch_exceptions()
    atexit.register(_worker_exit)


def record_error(text):
    """The error this rank's exit record gives the launcher (a server's own
    failure; a worker's uncaught exception is recorded by its hook)."""
    if _job is not None and _job.last_error is None:
        _job.last_error = text


def _watch_exceptions():
    previous = sys.excepthook

    def hook(kind, value, tb):
        _job.last_error = "".join(traceback.format_exception(kind, value, tb))
        previous(kind, value, tb)
    sys.excepthook = hook


def _worker_exit():
    client = _job.client
    if client is not None:
        from mx_engine import engine
        try:
            engine.wait_for_all()       # pushes still in flight leave first
        except Exception as exc:
            _job.last_error = _job.last_error or f"{type(exc).__name__}: {exc}"
    error = _job.last_error
    if client is not None and client.failure is not None:
        error = error or client.failure
    # The servers stop serving once every worker said so, failed or not (a
    # small eager send: it returns even when a server is gone).
    head = wire.header(wire.STOP, arg2=_job.layout.rank)
    for rank in _job.layout.servers:
        _job.comm.Send([head, _job.MPI.BYTE], dest=rank, tag=wire.TAG_REQUEST)
    if error is not None:
        _leave(1, error)
    if client is not None:
        client.close()
    _leave(0)


def job_of_this_rank():
    """This rank's job (after ``join``), or None outside one."""
    return _job


def job():
    """This worker's job (MPI, its communicator, the layout), or a clear error
    when the process was not started as part of one."""
    if _job is None:
        join()
    if _job is None:
        raise MXNetError(
            "a distributed kvstore needs a job started by the launcher: "
            "python -m mx_kvstore.launch -n NUM_WORKERS -s NUM_SERVERS python script.py "
            "(or mpiexec with DMLC_NUM_WORKER/DMLC_NUM_SERVER set)")
    if _job.layout.is_server:
        raise MXNetError("a server rank cannot create a kvstore")
    if _job.layout.num_servers == 0:
        raise MXNetError("this job has no server ranks (DMLC_NUM_SERVER=0): start it with "
                         "python -m mx_kvstore.launch -n W -s S ... (S >= 1)")
    return _job


def client():
    """This worker's one connection to the servers."""
    j = job()
    with _lock:
        if j.client is None:
            from mx_kvstore._dist_transport import Client
            j.client = Client(j.MPI, j.comm, j.layout, timeout())
    return j.client
