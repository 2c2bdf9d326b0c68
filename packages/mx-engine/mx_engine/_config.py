"""The engine's environment variables, read and checked in one place.

MXNET_ENGINE_TYPE, MXNET_CPU_WORKER_NTHREADS, MXNET_CPU_PRIORITY_NTHREADS,
MXNET_GPU_WORKER_NTHREADS, MXNET_GPU_COPY_NTHREADS, MXNET_GPU_PRIORITY_NTHREADS,
MXNET_ENGINE_MAX_INFLIGHT and MXNET_ENGINE_WATCHDOG_SECONDS; their defaults
and meaning are in the README's table.  MXNet's default of one CPU worker
assumed OpenMP inside each operator; here parallelism comes from the
workers, so the default is one per CPU.
"""
import os
from dataclasses import dataclass

ENGINE_TYPES = ("ThreadedEnginePerDevice", "ThreadedEnginePooled", "NaiveEngine")
# MXNet also accepted the old names.
_ALIASES = {"ThreadedEngine": "ThreadedEnginePooled", "Naive": "NaiveEngine"}


@dataclass(frozen=True)
class EngineConfig:
    engine_type: str
    cpu_worker_nthreads: int
    cpu_priority_nthreads: int
    gpu_worker_nthreads: int
    gpu_copy_nthreads: int
    gpu_priority_nthreads: int
    max_inflight: int
    watchdog_seconds: float


def _int_var(name, default, minimum=1):
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"environment variable {name} must be an integer, "
                         f"got {raw!r}") from None
    if value < minimum:
        raise ValueError(f"environment variable {name} must be >= {minimum}, "
                         f"got {value}")
    return value


def _float_var(name, default):
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"environment variable {name} must be a number of "
                         f"seconds, got {raw!r}") from None
    if value < 0:
        raise ValueError(f"environment variable {name} must be >= 0, got {value}")
    return value


def load(engine_type=None):
    """The configuration from the environment; ``engine_type`` overrides
    MXNET_ENGINE_TYPE.  Raises ValueError naming a malformed variable."""
    if engine_type is None:
        engine_type = os.environ.get("MXNET_ENGINE_TYPE", "") or ENGINE_TYPES[0]
    engine_type = _ALIASES.get(engine_type, engine_type)
    if engine_type not in ENGINE_TYPES:
        raise ValueError(f"MXNET_ENGINE_TYPE must be one of {', '.join(ENGINE_TYPES)}, "
                         f"got {engine_type!r}")
    return EngineConfig(
        engine_type=engine_type,
        cpu_worker_nthreads=_int_var("MXNET_CPU_WORKER_NTHREADS", os.cpu_count() or 1),
        cpu_priority_nthreads=_int_var("MXNET_CPU_PRIORITY_NTHREADS", 4),
        # MXNet's default is 2; ours launch CuPy twins holding the GIL, so a
        # second worker mostly contends with the pushing thread: on an H200
        # one worker made a small operator 26 us instead of 61-71 and an MLP
        # training step 1.9 ms instead of 2.7-2.9 (README, Performance "GPU").
        gpu_worker_nthreads=_int_var("MXNET_GPU_WORKER_NTHREADS", 1),
        gpu_copy_nthreads=_int_var("MXNET_GPU_COPY_NTHREADS", 2),
        gpu_priority_nthreads=_int_var("MXNET_GPU_PRIORITY_NTHREADS", 1),
        max_inflight=_int_var("MXNET_ENGINE_MAX_INFLIGHT", 1 << 16),
        watchdog_seconds=_float_var("MXNET_ENGINE_WATCHDOG_SECONDS", 0.0),
    )
