# cython: language_level=3
"""LibSVMIter's batch filler: rows parsed by _libsvm_reader.h with the GIL
released into CSR components, batched as MXNet's SparseBatchLoader does
(round_batch: the last batch is completed from the start of the data, and
the next epoch goes on after those rows)."""
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcpy
from libcpp.string cimport string
from libcpp.vector cimport vector

import numpy as np

from mx_engine.base import MXNetError


cdef extern from "_libsvm_reader.h" namespace "mxio" nogil:
    cdef struct ByteRange:
        string path
        int64_t begin
        int64_t end

    cdef cppclass CsrRows:
        vector[float] values
        vector[int64_t] indices
        vector[int64_t] indptr

    cdef cppclass LibSVMReader:
        LibSVMReader(const vector[ByteRange]&, int64_t) except +
        void rewind()
        int next_row(CsrRows* rows, float* label) except +
        const string& error()
        const string& error_file()
        int64_t error_offset()
        int64_t error_column()


class LibSVMFormatError(MXNetError, ValueError):
    """A LibSVM file that does not hold the rows the iterator was told of."""


cdef enum:
    OK = 1
    END = 0
    BAD_DATA = -1
    BAD_LABEL = -2
    LABEL_SHORT = -3
    TOO_FEW = -4


cdef struct Loader:
    LibSVMReader* data
    LibSVMReader* label        # NULL: the labels are the data lines' own
    int batch_size
    uint64_t counter
    int num_overflow


cdef struct Batch:
    CsrRows data
    CsrRows label
    vector[float] dense_label
    vector[uint64_t] index


cdef int read_one(Loader* s, Batch* b) noexcept nogil:
    cdef float value, ignored
    cdef int got = s.data.next_row(&b.data, &value)
    if got <= 0:
        return BAD_DATA if got < 0 else END
    if s.label != NULL:
        got = s.label.next_row(&b.label, &ignored)
        if got < 0:
            return BAD_LABEL
        if got == 0:
            return LABEL_SHORT
    else:
        b.dense_label.push_back(value)
    b.index.push_back(s.counter)
    s.counter += 1
    return OK


cdef void rewind(Loader* s) noexcept nogil:
    s.data.rewind()
    if s.label != NULL:
        s.label.rewind()
    s.counter = 0


cdef int fill_batch(Loader* s, Batch* b, int* pad) noexcept nogil:
    """One batch into b; pad gets its padding.  END when the epoch is over
    (an overflow into the next epoch ends it too)."""
    cdef int top = 0, got
    pad[0] = 0
    if s.num_overflow != 0:
        return END
    while top < s.batch_size:
        got = read_one(s, b)
        if got == END:
            break
        if got != OK:
            return got
        top += 1
    if top == s.batch_size:
        return OK
    if top == 0:
        return END
    rewind(s)
    while top < s.batch_size:
        got = read_one(s, b)
        if got == END:
            return TOO_FEW
        if got != OK:
            return got
        top += 1
        s.num_overflow += 1
    pad[0] = s.num_overflow
    return OK


cdef object to_numpy(const void* src, size_t n, dtype):
    out = np.empty(n, dtype=dtype)
    cdef char[::1] view = out.view(np.int8)
    if n:
        memcpy(&view[0], src, n * out.itemsize)
    return out


cdef object csr_parts(CsrRows* rows):
    return (to_numpy(rows.values.data(), rows.values.size(), np.float32),
            to_numpy(rows.indices.data(), rows.indices.size(), np.int64),
            to_numpy(rows.indptr.data(), rows.indptr.size(), np.int64))


cdef vector[ByteRange] byte_ranges(ranges):
    cdef vector[ByteRange] out
    cdef ByteRange r
    for path, begin, end in ranges:
        r.path = path.encode()
        r.begin = begin
        r.end = end
        out.push_back(r)
    return out


cdef object reader_error(LibSVMReader* reader, str argument):
    path = reader.error_file().decode()
    offset = reader.error_offset()
    what = reader.error().decode()
    if reader.error_column() == 0:      # the file itself could not be read
        return OSError(f"LibSVMIter: {argument} {what}")
    with open(path, "rb") as f:     # the line number, counted only for the message
        line = f.read(offset).count(b"\n") + 1
    return LibSVMFormatError(f"LibSVMIter: {argument} {path}, line {line} (byte offset "
                             f"{offset}), column {reader.error_column()}: {what}")


cdef class LibSVMLoader:
    """The rows of the byte ranges ``data_ranges`` (``(path, begin, end)``)
    as CSR batches; labels from ``label_ranges`` (CSR) or the lines' own."""
    cdef Loader s
    cdef object data_files, label_files

    def __cinit__(self, data_ranges, label_ranges, int64_t data_columns,
                  int64_t label_columns, int batch_size):
        self.s.data = NULL
        self.s.label = NULL
        self.data_files = sorted({r[0] for r in data_ranges})
        self.label_files = sorted({r[0] for r in label_ranges}) if label_ranges else None
        self.s.data = new LibSVMReader(byte_ranges(data_ranges), data_columns)
        if label_ranges:
            self.s.label = new LibSVMReader(byte_ranges(label_ranges), label_columns)
        self.s.batch_size = batch_size
        self.s.counter = 0
        self.s.num_overflow = 0

    def __dealloc__(self):
        del self.s.data
        if self.s.label != NULL:
            del self.s.label

    def before_first(self):
        """MXNet's BeforeFirst: after an overflow, the next epoch goes on
        where the overflow stopped."""
        if self.s.num_overflow == 0:
            rewind(&self.s)
        else:
            self.s.num_overflow = 0

    def next_batch(self):
        """``(data, label, index, pad)`` of the next batch, or None at the end
        of the epoch: data is ``(values, indices, indptr)``, label the same
        for a label file, else a float32 array of the lines' labels."""
        cdef Batch b
        cdef int got, pad = 0
        b.dense_label.reserve(self.s.batch_size)
        b.index.reserve(self.s.batch_size)
        with nogil:
            got = fill_batch(&self.s, &b, &pad)
        if got == OK:
            label = csr_parts(&b.label) if self.s.label != NULL else \
                to_numpy(b.dense_label.data(), b.dense_label.size(), np.float32)
            return (csr_parts(&b.data), label,
                    to_numpy(b.index.data(), b.index.size(), np.uint64), pad)
        if got == END:
            return None
        if got == BAD_DATA:
            raise reader_error(self.s.data, "data_libsvm")
        if got == BAD_LABEL:
            raise reader_error(self.s.label, "label_libsvm")
        if got == LABEL_SHORT:
            raise LibSVMFormatError(f"LibSVMIter: label_libsvm {self.label_files} has fewer "
                                    f"rows than data_libsvm {self.data_files} (ran out at "
                                    f"example {self.s.counter})")
        raise LibSVMFormatError(f"LibSVMIter: data_libsvm {self.data_files} holds fewer rows "
                                f"than batch_size={self.s.batch_size}, too few to fill a "
                                f"round batch")
