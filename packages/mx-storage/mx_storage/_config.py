"""mx-storage's environment variables, read and checked in one place.

MXNET_CPU_MEM_POOL_TYPE / MXNET_GPU_MEM_POOL_TYPE ('Naive', 'Round' or
'Unpooled'; default Naive), MXNET_CPU_MEM_POOL_ROUND_LINEAR_CUTOFF /
MXNET_GPU_MEM_POOL_ROUND_LINEAR_CUTOFF (Round: power-of-two buckets up to
2**cutoff bytes, then multiples of it; default 24), MXNET_GPU_MEM_POOL_RESERVE
(percent of a GPU left alone; default 5), MXNET_CPU_MEM_POOL_MMAP_THRESHOLD
(host blocks of at least this many bytes are mapped from the OS and unmapped
when released, smaller ones come from malloc; default 1 MiB; lower keeps RSS
closer to what the pools hold, higher makes a cache miss cheaper),
MXNET_CPU_MEM_POOL_HUGEPAGES (1: mapped blocks of 2 MiB and more are advised
to use transparent huge pages; default 1), MXNET_STORAGE_DEBUG (1: fill freed
blocks with a pattern and check it on reuse).  set_pool_type() overrides the
pool types for pools created afterwards.
"""
import os
from dataclasses import dataclass

POOL_TYPES = ("Naive", "Round", "Unpooled")
MMAP_THRESHOLD = 1 << 20


@dataclass(frozen=True)
class PoolConfig:
    pool_type: str
    round_cutoff: int


@dataclass(frozen=True)
class StorageConfig:
    cpu: PoolConfig
    gpu: PoolConfig
    gpu_reserve_percent: int
    cpu_mmap_threshold: int
    cpu_huge_pages: bool
    debug: bool


_overrides = {}


def int_var(name, default, lo, hi):
    """An integer variable in [lo, hi]; ValueError names a malformed one."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"environment variable {name} must be an integer, got {raw!r}") from None
    if not lo <= value <= hi:
        raise ValueError(f"environment variable {name} must be in [{lo}, {hi}], got {value}")
    return value


def _pool(kind):
    name = f"MXNET_{kind.upper()}_MEM_POOL_TYPE"
    pool_type = os.environ.get(name, "").strip() or "Naive"
    if pool_type not in POOL_TYPES:
        raise ValueError(f"environment variable {name} must be one of "
                         f"{', '.join(POOL_TYPES)}, got {pool_type!r}")
    cutoff = int_var(f"MXNET_{kind.upper()}_MEM_POOL_ROUND_LINEAR_CUTOFF", 24, 6, 40)
    over = _overrides.get(kind)
    if over is not None:
        pool_type = over[0]
        cutoff = over[1] if over[1] is not None else cutoff
    return PoolConfig(pool_type, cutoff)


def load():
    """The configuration now in force; ValueError names a malformed variable."""
    return StorageConfig(
        cpu=_pool("cpu"),
        gpu=_pool("gpu"),
        gpu_reserve_percent=int_var("MXNET_GPU_MEM_POOL_RESERVE", 5, 0, 100),
        cpu_mmap_threshold=int_var("MXNET_CPU_MEM_POOL_MMAP_THRESHOLD", MMAP_THRESHOLD,
                                   4096, 1 << 62),
        cpu_huge_pages=bool(int_var("MXNET_CPU_MEM_POOL_HUGEPAGES", 1, 0, 1)),
        debug=os.environ.get("MXNET_STORAGE_DEBUG", "0").strip() not in ("", "0"),
    )


def override(device_type, pool_type, round_cutoff=None):
    _overrides[device_type] = (pool_type, round_cutoff)
