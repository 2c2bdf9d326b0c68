"""ImageRecordIter epoch time (mx_io.io): 512 JPEGs of 128x128 to 3x112x112,
batch 64, rand_crop + rand_mirror, by preprocess_threads.

Per-image time is the reported time divided by 512.  The side-by-side ratio
against MXNet 1.9.1 comes from ``benchmarks/compare_image_record_iter.py``.
"""
import tempfile

from benchmarks.compare_image_record_iter import make_rec
from mx_io.io import ImageRecordIter


class Epoch:
    """One epoch (reset, then every batch waited for)."""
    params = [[1, 2]]
    param_names = ["preprocess_threads"]

    def setup(self, threads):
        self.dir = tempfile.TemporaryDirectory()
        rec = make_rec(self.dir.name, 512)
        self.it = ImageRecordIter(path_imgrec=rec, data_shape=(3, 112, 112), batch_size=64,
                                  rand_crop=True, rand_mirror=True, preprocess_threads=threads)

    def teardown(self, threads):
        self.it.close()
        self.dir.cleanup()

    def time_epoch(self, threads):
        self.it.reset()
        for batch in self.it:
            batch.data[0].wait_to_read()
