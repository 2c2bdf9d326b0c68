# The native RecordIO reader and writer (dmlc-core's recordio format, as
# MXNet 1.9.1 writes it).  Other mx_io modules cimport RecordReader to pull
# records without the GIL: next_record() returns 1 with a record, 0 at the
# end of the file, -1 on a bad record (then raise reader.error()).
from libc.stdint cimport int64_t, uint32_t


cdef class RecordReader:
    cdef readonly object path
    cdef int fd
    cdef int64_t file_size
    cdef char* chunk            # file bytes [chunk_offset, chunk_offset + chunk_len)
    cdef size_t chunk_cap
    cdef size_t chunk_len
    cdef int64_t chunk_offset
    cdef char* joined           # a multi-part record, reassembled
    cdef size_t joined_cap
    cdef int64_t position       # file offset of the next record's header
    cdef bint busy              # a call is inside nogil code (set with the GIL held)
    # The last failure, formatted by error() (nogil code cannot raise).
    cdef int err_kind
    cdef int64_t err_offset
    cdef int64_t err_record
    cdef int64_t err_a
    cdef int64_t err_b

    cdef int next_record(self, const char** data, size_t* size) noexcept nogil
    cdef object error(self)
    cdef enter(self, str caller)
    cdef int fail(self, int kind, int64_t offset, int64_t record, int64_t a,
                  int64_t b) noexcept nogil
    cdef void refresh_size(self) noexcept nogil
    cdef const char* bytes_at(self, int64_t offset, size_t n) noexcept nogil
    cdef int append_joined(self, size_t at, const char* src, size_t n, bint magic) noexcept nogil


cdef class RecordWriter:
    cdef readonly object path
    cdef int fd
    cdef char* buf
    cdef size_t buf_cap
    cdef size_t buf_len
    cdef int64_t written         # bytes handed to the OS so far
    cdef bint busy               # a call is inside nogil code (set with the GIL held)
    cdef int err_no

    cdef int write_record(self, const char* data, size_t size) noexcept nogil
    cdef raise_os_error(self)
    cdef enter(self, str caller)
    cdef int flush_buffer(self) noexcept nogil
    cdef int put(self, const char* src, size_t n) noexcept nogil
    cdef int put_part(self, uint32_t cflag, const char* src, size_t n) noexcept nogil
