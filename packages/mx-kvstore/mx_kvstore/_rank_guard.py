"""Runs one rank's command as its child, so a rank that is killed is named
exactly and the others live long enough to report the peer they lost.

The launcher runs ``python _rank_guard.py COMMAND...`` on every rank (by
path: importing the package would cost every rank a second ``import mx``).
Hydra, MPICH's mpiexec, kills every rank the moment one of its processes
ends by a signal (``-disable-auto-cleanup`` does not stop it in MPICH
5.0.2), so no survivor could raise the error naming the dead peer.  The
guard is hydra's process: when its child dies by a signal it writes
``rank<N>.died`` (signal, pid, time) into MX_KVSTORE_STATUS_DIR and keeps
the rank's place until every other rank has left (at most
MXNET_KVSTORE_TIMEOUT + 1 s), then exits with 128 + the signal.  The child
inherits every file descriptor (hydra's PMI connection among them).
A guard whose own parent (hydra's proxy) is gone kills its rank: the job
was killed, and the rank must not live on without it.
"""
import json
import os
import signal
import subprocess
import sys
import time


def _write(folder, name, record):
    path = os.path.join(folder, name)
    with open(path + ".tmp", "w") as f:
        json.dump(record, f)
    os.replace(path + ".tmp", path)


def _others_left(folder, rank, size):
    for r in range(size):
        if r != rank and not any(os.path.exists(os.path.join(folder, f"rank{r}.{end}"))
                                 for end in ("exit", "died")):
            return False
    return True


def _wait_unless_orphaned(child, every_s=0.2):
    """The child's exit status; if this guard's own parent (mpiexec's
    proxy) goes away first, the job is gone: the child is killed rather
    than left running with no one to answer it."""
    parent = os.getppid()
    while True:
        try:
            return child.wait(timeout=every_s)
        except subprocess.TimeoutExpired:
            pass
        if os.getppid() != parent:
            child.kill()
            child.wait()
            return 1


def main(argv):
    folder = os.environ.get("MX_KVSTORE_STATUS_DIR")
    rank, size = int(os.environ.get("PMI_RANK", "0")), int(os.environ.get("PMI_SIZE", "1"))
    # Hydra tells the survivors of a failed rank with SIGUSR1, whose default
    # action ends them before they can report; ignored here, and so in the
    # child (an ignored signal stays ignored across exec).
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    child = subprocess.Popen(argv, close_fds=False)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda number, frame: child.send_signal(number))
    code = _wait_unless_orphaned(child)
    if code >= 0 or not folder:
        return code if code >= 0 else 128 - code
    number = -code
    _write(folder, f"rank{rank}.died", {"signal": number, "name": signal.Signals(number).name,
                                        "pid": child.pid, "time": time.time()})
    limit = time.monotonic() + float(os.environ.get("MXNET_KVSTORE_TIMEOUT", "300")) + 1
    while time.monotonic() < limit and not _others_left(folder, rank, size):
        time.sleep(0.05)
    return 128 + number


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
