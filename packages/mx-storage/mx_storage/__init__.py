"""mx-storage: the pooled allocator per device and the resource manager
(temporary workspaces and random generators, in ``mx_storage.resource``).

Depends on mx-engine.
"""
from mx_storage import resource
from mx_storage._storage import (Handle, alloc, direct_free, empty_cache, free,
                                 memory_stats, memory_summary, release_all, reset_peak,
                                 set_pool_type)
from mx_storage._views import as_cupy, as_numpy

__version__ = "0.1.0"

__all__ = ["resource", "Handle", "alloc", "free", "direct_free", "release_all", "empty_cache",
           "memory_stats", "memory_summary", "reset_peak", "set_pool_type", "as_numpy",
           "as_cupy", "__version__"]
