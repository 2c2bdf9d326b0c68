"""The launcher's checks before it starts a job (no MPI needed)."""
import subprocess
import sys

from mx_kvstore import launch


def _fake_mpiexec(tmp_path, version_text):
    exe = tmp_path / "mpiexec"
    exe.write_text(f"#!/bin/sh\ncat <<'END'\n{version_text}\nEND\n")
    exe.chmod(0o755)
    return exe


def test_an_mpiexec_other_than_hydra_is_named_before_the_job_starts(tmp_path):
    # Open MPI's mpiexec reads -disable-auto-cleanup as -d -i ...: the job never
    # started and the launcher could only say that no rank joined
    exe = _fake_mpiexec(tmp_path, "mpiexec (Open MPI) 5.0.3\n\nReport bugs to ...")
    proc = subprocess.run([sys.executable, "-m", "mx_kvstore.launch", "--mpiexec", str(exe),
                           "-n", "1", "-s", "1", "true"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode != 0
    assert f"{exe} is not MPICH's mpiexec (Hydra) but 'mpiexec (Open MPI) 5.0.3'" in proc.stderr
    assert "pip install mpich mpi4py" in proc.stderr and "never joined" not in proc.stderr


def test_hydra_passes_and_a_broken_mpiexec_is_named(tmp_path):
    assert launch._not_hydra(str(_fake_mpiexec(tmp_path, "HYDRA build details:\n"
                                                         "    Version: 5.0.2"))) is None
    missing = tmp_path / "nowhere" / "mpiexec"
    assert launch._not_hydra(str(missing)).startswith(f"{missing} --version failed "
                                                      "(FileNotFoundError")
