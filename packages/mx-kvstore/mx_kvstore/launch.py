"""Starts a distributed job on this machine through mpiexec:

    python -m mx_kvstore.launch -n NUM_WORKERS [-s NUM_SERVERS] [--timeout S]
        [--hostfile FILE] [--status-dir DIR] COMMAND...

runs COMMAND on NUM_WORKERS + NUM_SERVERS MPI ranks (workers first) with
MXNet's environment (DMLC_NUM_WORKER, DMLC_NUM_SERVER) and, with
--timeout, MXNET_KVSTORE_TIMEOUT.  Every rank runs the same command; the
servers serve at ``import mx``.  Exits with 0 when every rank did, else
non-zero after naming each rank that failed or died.
"""
import argparse
import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import tempfile
import time

from mx_kvstore._dist_mpi import find_mpiexec

# Runs each rank's command (by path: no package import on the way).
_GUARD = pathlib.Path(__file__).with_name("_rank_guard.py")
_HOST = socket.gethostname()


def _not_hydra(mpiexec):
    """Why ``mpiexec`` cannot start the job (the launcher passes Hydra's
    options, MPICH's process manager), or None."""
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{mpiexec} --version failed ({type(exc).__name__}: {exc})"
    if "HYDRA" in out:
        return None
    first = next((line.strip() for line in out.splitlines() if line.strip()), "no output")
    return (f"{mpiexec} is not MPICH's mpiexec (Hydra) but '{first}'; the launcher passes "
            f"Hydra's options (-disable-auto-cleanup, -f HOSTFILE): pip install mpich mpi4py "
            f"(its mpiexec lands beside this Python), or name one with --mpiexec")


def _parser():
    p = argparse.ArgumentParser(prog="python -m mx_kvstore.launch",
                                description="Run a distributed kvstore job through mpiexec.")
    p.add_argument("-n", "--num-workers", type=int, required=True, help="worker ranks")
    p.add_argument("-s", "--num-servers", type=int, default=None,
                   help="server ranks (default: as many as workers)")
    p.add_argument("--timeout", type=float, default=None,
                   help="MXNET_KVSTORE_TIMEOUT: seconds before a silent peer is an error")
    p.add_argument("--hostfile", "-H", default=None,
                   help="mpiexec host file (passed through as -f)")
    p.add_argument("--mpiexec", default=None, help="the mpiexec to use")
    p.add_argument("--status-dir", default=None,
                   help="where ranks record their start and end (default: a temporary "
                        "folder here; with several hosts, one they share)")
    p.add_argument("command", nargs=argparse.REMAINDER, help="the command every rank runs")
    return p


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read(path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


class _Watch:
    """Follows the ranks while mpiexec runs: the ranks killed by a signal
    (their guard, _rank_guard.py, writes rank<N>.died), those that vanished
    without any record (the guard itself killed), and the ranks still
    running long after another failed (hung: stopped here)."""

    def __init__(self, folder, size, grace_s):
        self.folder, self.size, self.grace_s = folder, size, grace_s
        self.started, self.exits, self.died, self.vanished, self.hung = {}, {}, {}, [], []
        self.first_failure = None

    def _failed(self):
        if self.first_failure is None:
            self.first_failure = time.monotonic()

    def finished(self, r):
        return r in self.exits or r in self.died or r in self.vanished or r in self.hung

    def poll(self):
        for r in range(self.size):
            if r not in self.started:
                record = _read(self.folder / f"rank{r}.json")
                if record is not None:
                    self.started[r] = record
            if r not in self.exits:
                record = _read(self.folder / f"rank{r}.exit")
                if record is not None:
                    self.exits[r] = record
                    if record["code"] != 0:
                        self._failed()
            if r not in self.died:
                record = _read(self.folder / f"rank{r}.died")
                if record is not None:
                    self.died[r] = record
                    self._failed()
            # Only a rank on this host can be polled; others report through
            # their records (a status folder the hosts share).
            if r in self.started and not self.finished(r) \
                    and self.started[r].get("host") == _HOST \
                    and not _alive(self.started[r]["pid"]):
                self.vanished.append(r)
                self._failed()
        if self.first_failure is not None and \
                time.monotonic() - self.first_failure > self.grace_s:
            for r, record in self.started.items():
                if not self.finished(r) and record.get("host") == _HOST:
                    self.hung.append(r)
                    try:
                        os.kill(record["pid"], signal.SIGKILL)
                    except OSError:
                        pass

    def verdicts(self):
        """Lines naming every rank that did not exit cleanly, the first
        death first."""
        lines = []
        # A rank this launcher killed as hung is reported as hung only.
        died = [(r, rec) for r, rec in self.died.items() if r not in self.hung]
        for i, (r, record) in enumerate(sorted(died, key=lambda kv: kv[1]["time"])):
            who = self.started[r]["describe"] if r in self.started else "before it joined"
            lines.append(f"rank {r} ({who}) died{' first' if i == 0 else ''}: killed by "
                         f"signal {record['signal']} ({record['name']}), pid {record['pid']}")
        for i, r in enumerate(self.vanished):
            who = self.started[r]["describe"]
            if i == 0 and not died:
                lines.append(f"rank {r} ({who}) died first, without an exit record "
                             f"(pid {self.started[r]['pid']}: killed or crashed)")
            else:
                lines.append(f"rank {r} ({who}) ended after it, without an exit record")
        for r in self.hung:
            lines.append(f"rank {r} ({self.started[r]['describe']}) still ran "
                         f"{self.grace_s:g} s after the first failure: killed as hung")
        for r in range(self.size):
            if r not in self.started and r not in self.died:
                lines.append(f"rank {r} never joined the job")
            elif r in self.exits and self.exits[r]["code"] != 0:
                error = (self.exits[r].get("error") or "").rstrip()
                lines.append(f"rank {r} ({self.started[r]['describe']}) exited with status "
                             f"{self.exits[r]['code']}:\n{error}")
        return lines


def main(argv=None):
    args = _parser().parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        _parser().error("COMMAND is missing")
    if args.num_workers < 1:
        _parser().error(f"-n {args.num_workers}: need at least one worker")
    servers = args.num_workers if args.num_servers is None else args.num_servers
    if servers < 1:
        _parser().error(f"-s {servers}: need at least one server")
    if args.timeout is not None and not args.timeout > 0:
        _parser().error(f"--timeout {args.timeout}: must be > 0 seconds")
    mpiexec = args.mpiexec or find_mpiexec()
    if mpiexec is None:
        sys.exit("mx_kvstore.launch: no mpiexec beside this Python or on PATH "
                 "(pip install mpich mpi4py)")
    not_hydra = _not_hydra(mpiexec)
    if not_hydra:
        sys.exit(f"mx_kvstore.launch: {not_hydra}")
    size = args.num_workers + servers
    env = dict(os.environ, DMLC_NUM_WORKER=str(args.num_workers), DMLC_NUM_SERVER=str(servers))
    env.pop("DMLC_ROLE", None)
    if args.timeout is not None:
        env["MXNET_KVSTORE_TIMEOUT"] = repr(args.timeout)
    timeout = float(env.get("MXNET_KVSTORE_TIMEOUT", "300"))
    with tempfile.TemporaryDirectory(prefix="mx-kvstore-", dir=args.status_dir) as folder:
        env["MX_KVSTORE_STATUS_DIR"] = folder
        # -disable-auto-cleanup: a rank that exits with an error does not
        # take the others down at once (a rank killed by a signal does
        # regardless; its guard stands in for it, see _rank_guard.py).
        cmd = [mpiexec, "-disable-auto-cleanup"]
        if args.hostfile:
            cmd += ["-f", args.hostfile]
        cmd += ["-n", str(size), sys.executable, str(_GUARD)] + command
        watch = _Watch(pathlib.Path(folder), size, grace_s=timeout + 1)
        proc = subprocess.Popen(cmd, env=env)
        while proc.poll() is None:
            watch.poll()
            time.sleep(0.05)
        # mpiexec may return while ranks that outlived a dead peer still run.
        while any(not watch.finished(r) for r, record in watch.started.items()
                  if record.get("host") == _HOST):
            watch.poll()
            time.sleep(0.05)
        watch.poll()
        rc = proc.returncode
        verdicts = watch.verdicts()
    if not verdicts and rc == 0:
        return 0
    for line in verdicts:
        print(f"mx_kvstore.launch: {line}", file=sys.stderr)
    if not verdicts:
        print(f"mx_kvstore.launch: mpiexec exited with status {rc}", file=sys.stderr)
    return rc if rc != 0 else 1


if __name__ == "__main__":
    sys.exit(main())
