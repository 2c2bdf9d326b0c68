"""What the pooled allocator costs, and what it saves against fresh memory.

Per-pair time is the reported time divided by ``n``.  Side-by-side ratios
against targets come from ``benchmarks/compare_storage.py``.
"""
import numpy as np

import mx_storage
from mx_engine import cpu
from mx_storage import _storage


class RecycledPairs:
    """alloc + free of one recycled block, from C and from Python."""
    params = [["c", "python"], [64, 4096, 1 << 20]]
    param_names = ["caller", "size"]

    def setup(self, caller, size):
        self.ctx = cpu()
        _storage._alloc_free_loop(10, size, self.ctx)     # the bucket now holds a block
        self.n = 10_000

    def time_pairs(self, caller, size):
        if caller == "c":
            _storage._alloc_free_loop(self.n, size, self.ctx)
        else:
            alloc, free, ctx = mx_storage.alloc, mx_storage.free, self.ctx
            for _ in range(self.n):
                free(alloc(size, ctx))


class TouchBigBlocks:
    """Allocate 64 MiB, write every page, free: the pool against np.empty
    (whose pages are faulted in afresh every time)."""
    params = [["pool", "numpy"]]
    param_names = ["allocator"]

    def setup(self, allocator):
        self.size = 64 << 20
        _storage._alloc_touch_free_loop(1, self.size, cpu())

    def time_alloc_touch_free(self, allocator):
        if allocator == "pool":
            _storage._alloc_touch_free_loop(4, self.size, cpu())
        else:
            for _ in range(4):
                a = np.empty(self.size, np.uint8)
                a[::4096] = 1
                del a
