"""The launcher's rank guard: a guard whose own parent (mpiexec's proxy)
dies kills its rank instead of leaving it running without a job."""
import os
import pathlib
import subprocess
import sys
import time

import mx_kvstore

GUARD = pathlib.Path(mx_kvstore.__file__).parent / "_rank_guard.py"


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(pid, 0); it has ended all the same.
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"


def test_guard_kills_its_rank_when_its_parent_is_gone(tmp_path):
    pid_file = tmp_path / "rank.pid"
    rank = (f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); "
            "time.sleep(60)")
    # The shell stands in for the proxy: it starts the guard and dies a
    # second later, so the guard is orphaned while its rank still sleeps.
    parent = subprocess.Popen(["sh", "-c", f'"$0" "$1" "$0" -c "$2" & sleep 1',
                               sys.executable, str(GUARD), rank], start_new_session=True)
    try:
        parent.wait(timeout=30)
        deadline = time.monotonic() + 20
        while not pid_file.exists() or not pid_file.read_text():
            assert time.monotonic() < deadline, "the rank never started"
            time.sleep(0.05)
        pid = int(pid_file.read_text())
        while _alive(pid):
            assert time.monotonic() < deadline, f"rank {pid} outlived its guard's parent"
            time.sleep(0.05)
    finally:
        try:
            os.killpg(parent.pid, 9)
        except ProcessLookupError:
            pass
