"""The root conftest.py runs ``gpu`` and ``mpi`` tests only where they can
run: on a machine without the hardware these are skipped (with the reason in
the -ra summary); where they run, their bodies confirm what was promised."""
import pathlib
import shutil
import sys

import pytest


@pytest.mark.gpu
def test_gpu_marker_runs_only_with_a_device():
    import cupy
    assert cupy.cuda.runtime.getDeviceCount() > 0


@pytest.mark.mpi
def test_mpi_marker_runs_only_with_mpiexec_and_mpi4py():
    import mpi4py  # noqa: F401
    # MPICH's wheel puts mpiexec beside the interpreter, not on PATH.
    beside = pathlib.Path(sys.executable).parent / "mpiexec"
    assert beside.is_file() or shutil.which("mpiexec") is not None

