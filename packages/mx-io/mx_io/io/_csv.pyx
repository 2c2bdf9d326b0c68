# cython: language_level=3
"""CSVIter's batch filler: rows parsed by _csv_reader.h with the GIL
released, batched as MXNet's BatchLoader does (round_batch, pad, index)."""
from libc.stdint cimport int32_t, int64_t, uint64_t
from libc.string cimport memset
from libcpp.string cimport string
from libcpp.vector cimport vector

from mx_engine.base import MXNetError


cdef extern from "_csv_reader.h" namespace "mxio" nogil:
    cdef cppclass CsvReader:
        CsvReader(const vector[string]&) except +
        void rewind()
        int next_row[T](T* out, size_t n)
        const string& error()


ctypedef fused num_t:
    float
    double
    int32_t
    int64_t


class CSVFormatError(MXNetError, ValueError):
    """A CSV file that does not hold the rows the iterator was told of."""


cdef enum:
    OK = 1
    END = 0
    BAD_DATA = -1
    BAD_LABEL = -2
    LABEL_SHORT = -3
    TOO_FEW = -4


cdef struct Loader:
    CsvReader* data
    CsvReader* label
    size_t data_unit
    size_t label_unit
    int batch_size
    bint round_batch
    uint64_t counter
    int num_overflow


cdef int read_one(Loader* s, num_t* data, num_t* label, uint64_t* index, int top) noexcept nogil:
    cdef int got = s.data.next_row(data + top * s.data_unit, s.data_unit)
    if got <= 0:
        return BAD_DATA if got < 0 else END
    if s.label != NULL:
        got = s.label.next_row(label + top * s.label_unit, s.label_unit)
        if got < 0:
            return BAD_LABEL
        if got == 0:
            return LABEL_SHORT
    else:
        memset(label + top * s.label_unit, 0, s.label_unit * sizeof(num_t))
    index[top] = s.counter
    s.counter += 1
    return OK


cdef void rewind(Loader* s) noexcept nogil:
    s.data.rewind()
    if s.label != NULL:
        s.label.rewind()
    s.counter = 0


cdef int fill_batch(Loader* s, num_t* data, num_t* label, uint64_t* index,
                    int* pad) noexcept nogil:
    """One batch into data/label/index; pad gets its padding.  END when the
    epoch is over (an overflow into the next epoch ends it too)."""
    cdef int top = 0, got
    pad[0] = 0
    if s.num_overflow != 0:
        return END
    while top < s.batch_size:
        got = read_one(s, data, label, index, top)
        if got == END:
            break
        if got != OK:
            return got
        top += 1
    if top == s.batch_size:
        return OK
    if top == 0:
        return END
    if s.round_batch:
        # The batch is completed from the start of the data, and the next
        # epoch goes on after those rows.
        rewind(s)
        while top < s.batch_size:
            got = read_one(s, data, label, index, top)
            if got == END:
                return TOO_FEW
            if got != OK:
                return got
            top += 1
            s.num_overflow += 1
        pad[0] = s.num_overflow
    else:
        pad[0] = s.batch_size - top
        memset(data + top * s.data_unit, 0, pad[0] * s.data_unit * sizeof(num_t))
        memset(label + top * s.label_unit, 0, pad[0] * s.label_unit * sizeof(num_t))
        memset(index + top, 0, pad[0] * sizeof(uint64_t))
    return OK


cdef class CSVLoader:
    """The rows of ``data_files`` (and ``label_files``) in batches."""
    cdef Loader s
    cdef object data_files, label_files

    def __cinit__(self, data_files, label_files, size_t data_unit, size_t label_unit,
                  int batch_size, bint round_batch):
        cdef vector[string] files
        self.s.data = NULL
        self.s.label = NULL
        self.data_files = list(data_files)
        self.label_files = list(label_files) if label_files else None
        for f in self.data_files:
            files.push_back(f.encode())
        self.s.data = new CsvReader(files)
        if self.label_files:
            files.clear()
            for f in self.label_files:
                files.push_back(f.encode())
            self.s.label = new CsvReader(files)
        self.s.data_unit = data_unit
        self.s.label_unit = label_unit
        self.s.batch_size = batch_size
        self.s.round_batch = round_batch
        self.s.counter = 0
        self.s.num_overflow = 0

    def __dealloc__(self):
        del self.s.data
        if self.s.label != NULL:
            del self.s.label

    def before_first(self):
        """MXNet's BeforeFirst: after an overflow, the next epoch goes on
        where the overflow stopped."""
        if not self.s.round_batch or self.s.num_overflow == 0:
            rewind(&self.s)
        else:
            self.s.num_overflow = 0

    def fill(self, num_t[::1] data, num_t[::1] label, uint64_t[::1] index):
        """Fills one batch; its pad, or -1 at the end of the epoch."""
        cdef int got, pad = 0
        if data.shape[0] != self.s.batch_size * self.s.data_unit or \
                label.shape[0] != self.s.batch_size * self.s.label_unit or \
                index.shape[0] != self.s.batch_size:
            raise ValueError("CSVIter: batch buffers of the wrong size")
        with nogil:
            got = fill_batch(&self.s, &data[0], &label[0], &index[0], &pad)
        if got == OK:
            return pad
        if got == END:
            return -1
        if got == BAD_DATA:
            raise CSVFormatError(f"CSVIter: data_csv {self.s.data.error().decode()}")
        if got == BAD_LABEL:
            raise CSVFormatError(f"CSVIter: label_csv {self.s.label.error().decode()}")
        if got == LABEL_SHORT:
            raise CSVFormatError(f"CSVIter: label_csv {self.label_files} has fewer rows than "
                                 f"data_csv {self.data_files} (ran out at example "
                                 f"{self.s.counter})")
        raise CSVFormatError(f"CSVIter: data_csv {self.data_files} holds fewer rows than "
                             f"batch_size={self.s.batch_size}, too few to fill a round batch")
