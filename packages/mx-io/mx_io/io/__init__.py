"""``mx.io``: data iterators (MXNet 1.9.1's python/mxnet/io).

Python iterators: DataIter, NDArrayIter, ResizeIter, PrefetchingIter.
Native ones (parsing in C++/Cython without the GIL, on a background thread,
as MXNet's C++ iterators): CSVIter, LibSVMIter, MNISTIter, ImageRecordIter,
ImageRecordUInt8Iter, on the MXDataIter base.
"""
from mx_io.io.base import DataBatch, DataDesc, DataIter
from mx_io.io.csv_iter import CSVIter
from mx_io.io.image_record_iter import ImageRecordIter, ImageRecordUInt8Iter
from mx_io.io.libsvm_iter import LibSVMIter
from mx_io.io.mnist_iter import MNISTIter
from mx_io.io.native import MXDataIter
from mx_io.io.ndarray_iter import NDArrayIter
from mx_io.io.wrappers import PrefetchingIter, ResizeIter

__all__ = ["DataBatch", "DataDesc", "DataIter", "NDArrayIter", "ResizeIter", "PrefetchingIter",
           "MXDataIter", "CSVIter", "LibSVMIter", "MNISTIter", "ImageRecordIter", "ImageRecordUInt8Iter"]
