"""RecordIO read and write throughput (mx_io.recordio).

Per-record time is the reported time divided by ``n``.  The side-by-side
ratios against MXNet 1.9.1 come from ``benchmarks/compare_recordio.py``.
"""
import os
import tempfile

import numpy as np

from mx_io import recordio


class ReadWrite:
    """MXRecordIO.read of every record of a file, and writing it."""
    params = [[64, 5000, 100_000]]
    param_names = ["record_bytes"]

    def setup(self, record_bytes):
        self.n = max(200, 2_000_000 // record_bytes)
        rng = np.random.default_rng(0)
        self.payloads = [rng.bytes(record_bytes) for _ in range(self.n)]
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "r.rec")
        self.time_write(record_bytes)

    def teardown(self, record_bytes):
        self.dir.cleanup()

    def time_read(self, record_bytes):
        rec = recordio.MXRecordIO(self.path, "r")
        while rec.read() is not None:
            pass
        rec.close()

    def time_write(self, record_bytes):
        rec = recordio.MXRecordIO(self.path, "w")
        for p in self.payloads:
            rec.write(p)
        rec.close()
