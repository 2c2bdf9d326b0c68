"""mx.image.ImageIter epoch time (mx_io): 512 JPEGs of 128x128 to 3x112x112,
batch 64, rand_crop + rand_mirror, by decode threads
(MXNET_CPU_WORKER_NTHREADS).

Per-image time is the reported time divided by 512.  The side-by-side ratio
against MXNet 1.9.1 comes from ``benchmarks/compare_image_iter.py``.
"""
import os
import tempfile

from benchmarks.compare_image_record_iter import make_rec
from mx_io.image import ImageIter


class Epoch:
    """One epoch (reset, then every batch waited for)."""
    params = [["1", "2"]]
    param_names = ["decode_threads"]

    def setup(self, threads):
        self.saved = os.environ.get("MXNET_CPU_WORKER_NTHREADS")
        os.environ["MXNET_CPU_WORKER_NTHREADS"] = threads
        self.dir = tempfile.TemporaryDirectory()
        rec = make_rec(self.dir.name, 512)
        self.it = ImageIter(64, (3, 112, 112), path_imgrec=rec, rand_crop=True,
                            rand_mirror=True)

    def teardown(self, threads):
        if self.saved is None:
            os.environ.pop("MXNET_CPU_WORKER_NTHREADS", None)
        else:
            os.environ["MXNET_CPU_WORKER_NTHREADS"] = self.saved
        self.dir.cleanup()

    def time_epoch(self, threads):
        self.it.reset()
        for batch in self.it:
            batch.data[0].wait_to_read()
