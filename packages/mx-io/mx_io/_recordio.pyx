"""dmlc-core's RecordIO format, read and written without the GIL.

A record on disk is one or more parts, each an 8-byte header (the magic
0xced7230a, then ``cflag << 29 | length``) and ``length`` data bytes padded
with zeros to a multiple of 4.  The writer cuts a record wherever its data
holds the magic at a 4-aligned offset and drops those four bytes; cflag says
whole record (0), first (1), middle (2) or last (3) part, and the reader puts
the magic back between parts.  This is how MXNet 1.9.1 writes ``.rec`` files,
so the bytes here are the same in both directions.

The reader pulls a whole chunk of the file with one pread() and cuts records
out of it; every length is checked against the file size before anything is
read or allocated, so a corrupt file costs an error naming its byte offset,
never a crash or a huge allocation.
"""
import os

from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.errno cimport EINTR, errno
from libc.stdint cimport int64_t, uint32_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy
from posix.stat cimport fstat, struct_stat
from posix.unistd cimport close, pread, write

from mx_io.errors import RecordIOError

cdef uint32_t MAGIC = 0xced7230a
cdef uint32_t LENGTH_MASK = (1u << 29) - 1
# Records of ImageNet .rec files are ~100 KB: a chunk holds a few dozen.
DEFAULT_CHUNK = 1 << 20
MAX_RECORD = LENGTH_MASK   # MXNet's writer accepts sizes below 2**29

cdef enum Failure:
    OK = 0
    TRUNCATED_HEADER = 1
    BAD_MAGIC = 2
    BAD_FLAG = 3
    TRUNCATED_DATA = 4
    READ_FAILED = 5
    NO_MEMORY = 6
    FILE_SHRANK = 7


cdef inline uint32_t load_u32(const char* p) noexcept nogil:
    cdef uint32_t v
    memcpy(&v, p, 4)
    return v


cdef inline size_t padded(size_t n) noexcept nogil:
    return (n + 3) & ~(<size_t>3)


cdef class RecordReader:
    """Reads the records of one RecordIO file in order, from any offset."""

    def __cinit__(self, path, size_t chunk_size=DEFAULT_CHUNK):
        self.fd = -1
        self.path = os.fspath(path)
        self.chunk_cap = max(chunk_size, 16)
        self.chunk = <char*>malloc(self.chunk_cap)
        if self.chunk == NULL:
            raise MemoryError(f"RecordIO reader: cannot allocate a {self.chunk_cap}-byte chunk")
        self.fd = os.open(self.path, os.O_RDONLY)
        self.file_size = os.fstat(self.fd).st_size

    def __dealloc__(self):
        free(self.chunk)
        free(self.joined)
        if self.fd >= 0:
            close(self.fd)

    cdef enter(self, str caller):
        # The GIL is dropped while reading: a second thread must not touch
        # the chunk meanwhile.  Checked and set under the GIL, so atomic.
        if self.busy:
            raise RecordIOError(self.path, self.position, f"{caller} called while another "
                                "thread reads this file; share a reader between threads "
                                "with a lock")

    def close(self):
        """Closes the file; a closed reader reads nothing more."""
        self.enter("close")
        if self.fd >= 0:
            close(self.fd)
            self.fd = -1

    def tell(self):
        """File offset of the next record."""
        return self.position

    def seek(self, int64_t offset):
        """Moves to ``offset``, which must be a record's first byte (a
        ``.idx`` position or a ``tell()``); reading checks that it is."""
        self.enter("seek")
        self.refresh_size()
        if offset < 0 or offset > self.file_size:
            raise RecordIOError(self.path, offset,
                                f"seek position {offset} is outside the file (size {self.file_size})")
        self.position = offset

    def read(self):
        """The next record as bytes, or None at the end of the file."""
        cdef const char* data
        cdef size_t size
        cdef int got
        if self.fd < 0:
            raise RecordIOError(self.path, self.position, "the file is closed")
        self.enter("read")
        self.busy = True
        try:
            with nogil:
                got = self.next_record(&data, &size)
            if got == 1:
                return PyBytes_FromStringAndSize(data, size)
            if got == 0:
                return None
            raise self.error()
        finally:
            self.busy = False

    cdef object error(self):
        kind, off, rec, a, b = (self.err_kind, self.err_offset, self.err_record,
                                self.err_a, self.err_b)
        where = "" if rec == off else f" (part of the record at byte offset {rec})"
        if kind == TRUNCATED_HEADER:
            why = f"truncated record header: {a} bytes left, 8 needed"
        elif kind == BAD_MAGIC:
            why = f"bad magic number 0x{a:08x} (expected 0x{MAGIC:08x}): not a record boundary"
        elif kind == BAD_FLAG:
            want = "0 or 1 to start a record" if rec == off else "2 or 3 to continue one"
            why = f"invalid part flag {a} (expected {want})"
        elif kind == TRUNCATED_DATA:
            why = f"record part claims {a} data bytes but only {b} remain in the file"
        elif kind == READ_FAILED:
            why = f"read failed: {os.strerror(a)}"
        elif kind == FILE_SHRANK:
            why = f"the file ended at byte {a} while reading (truncated while open?)"
        else:
            why = f"cannot allocate {a} bytes"
        return RecordIOError(self.path, off, why + where)

    cdef int fail(self, int kind, int64_t offset, int64_t record, int64_t a,
                  int64_t b) noexcept nogil:
        self.err_kind = kind
        self.err_offset = offset
        self.err_record = record
        self.err_a = a
        self.err_b = b
        return -1

    cdef void refresh_size(self) noexcept nogil:
        # Another process may still be appending to the file.
        cdef struct_stat st
        if self.fd >= 0 and fstat(self.fd, &st) == 0:
            self.file_size = st.st_size

    cdef const char* bytes_at(self, int64_t offset, size_t n) noexcept nogil:
        """Pointer to file bytes [offset, offset + n), refilling the chunk
        from ``offset`` if they are not in it; NULL on failure.  Callers have
        checked that the file holds them."""
        cdef int64_t rel = offset - self.chunk_offset
        cdef size_t want, got = 0
        cdef ssize_t r
        cdef char* grown
        if rel >= 0 and <size_t>rel + n <= self.chunk_len:
            return self.chunk + rel
        if n > self.chunk_cap:
            grown = <char*>realloc(self.chunk, n)
            if grown == NULL:
                self.fail(NO_MEMORY, offset, offset, n, 0)
                return NULL
            self.chunk, self.chunk_cap = grown, n
        want = <size_t>min(<int64_t>self.chunk_cap, self.file_size - offset)
        self.chunk_offset, self.chunk_len = offset, 0
        while got < want:
            r = pread(self.fd, self.chunk + got, want - got, offset + got)
            if r < 0 and errno == EINTR:
                continue
            if r < 0:
                self.fail(READ_FAILED, offset + got, offset, errno, 0)
                return NULL
            if r == 0:
                break
            got += r
        self.chunk_len = got
        if got < n:
            self.fail(FILE_SHRANK, offset, offset, offset + got, 0)
            return NULL
        return self.chunk

    cdef int append_joined(self, size_t at, const char* src, size_t n, bint magic) noexcept nogil:
        cdef size_t need = at + n + (4 if magic else 0)
        cdef char* grown
        if need > self.joined_cap:
            grown = <char*>realloc(self.joined, max(need, 2 * self.joined_cap))
            if grown == NULL:
                return self.fail(NO_MEMORY, self.position, self.position, need, 0)
            self.joined = grown
            self.joined_cap = max(need, 2 * self.joined_cap)
        memcpy(self.joined + at, src, n)
        if magic:
            memcpy(self.joined + at + n, &MAGIC, 4)
        return 0

    cdef int next_record(self, const char** data, size_t* size) noexcept nogil:
        cdef int64_t start = self.position, off = self.position
        cdef const char* head
        cdef const char* body
        cdef uint32_t lrec, cflag
        cdef size_t length, total = 0
        cdef bint first = True
        if off >= self.file_size:
            self.refresh_size()
            if off >= self.file_size:
                return 0
        while True:
            if off + 8 > self.file_size:
                self.refresh_size()
                if off + 8 > self.file_size:
                    return self.fail(TRUNCATED_HEADER, off, start, self.file_size - off, 0)
            head = self.bytes_at(off, 8)
            if head == NULL:
                return -1
            if load_u32(head) != MAGIC:
                return self.fail(BAD_MAGIC, off, start, load_u32(head), 0)
            lrec = load_u32(head + 4)
            cflag, length = lrec >> 29, lrec & LENGTH_MASK
            if (first and cflag != 0 and cflag != 1) or (not first and cflag != 2 and cflag != 3):
                return self.fail(BAD_FLAG, off, start, cflag, 0)
            if off + 8 + <int64_t>padded(length) > self.file_size:
                self.refresh_size()
                if off + 8 + <int64_t>padded(length) > self.file_size:
                    return self.fail(TRUNCATED_DATA, off, start, length, self.file_size - off - 8)
            body = self.bytes_at(off + 8, padded(length))
            if body == NULL:
                return -1
            off += 8 + <int64_t>padded(length)
            if cflag == 0:            # the common case: no copy here
                data[0], size[0] = body, length
                self.position = off
                return 1
            # cflag 1 or 2: the writer dropped a magic number after this part.
            if self.append_joined(total, body, length, cflag != 3) != 0:
                return -1
            total += length + (4 if cflag != 3 else 0)
            first = False
            if cflag == 3:
                data[0], size[0] = self.joined, total
                self.position = off
                return 1


cdef class RecordWriter:
    """Appends records to a new RecordIO file (truncating it)."""

    def __cinit__(self, path, size_t buffer_size=DEFAULT_CHUNK):
        self.fd = -1
        self.path = os.fspath(path)
        self.buf_cap = max(buffer_size, 16)
        self.buf = <char*>malloc(self.buf_cap)
        if self.buf == NULL:
            raise MemoryError(f"RecordIO writer: cannot allocate a {self.buf_cap}-byte buffer")
        self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)

    def __dealloc__(self):
        if self.fd >= 0:
            self.flush_buffer()
            close(self.fd)
        free(self.buf)

    cdef enter(self, str caller):
        # As RecordReader.enter: one thread at a time in the nogil code.
        if self.busy:
            raise RecordIOError(self.path, self.tell(), f"{caller} called while another "
                                "thread writes this file; share a writer between threads "
                                "with a lock")

    def tell(self):
        """Bytes written so far: the offset the next record will start at."""
        return self.written + <int64_t>self.buf_len

    def write(self, const unsigned char[::1] data not None):
        """Appends ``data`` (any contiguous bytes-like object) as one record."""
        cdef int rc
        if self.fd < 0:
            raise RecordIOError(self.path, self.tell(), "the file is closed")
        if <size_t>data.shape[0] > MAX_RECORD:
            raise RecordIOError(self.path, self.tell(),
                                f"a record holds at most {MAX_RECORD} bytes, got {data.shape[0]}")
        self.enter("write")
        self.busy = True
        try:
            with nogil:
                rc = self.write_record(<const char*>&data[0] if data.shape[0]
                                       else <const char*>"", data.shape[0])
        finally:
            self.busy = False
        if rc != 0:
            self.raise_os_error()

    def flush(self):
        """Hands buffered bytes to the OS."""
        self.enter("flush")
        if self.fd >= 0 and self.flush_buffer() != 0:
            self.raise_os_error()

    def close(self):
        """Flushes and closes the file."""
        cdef int rc
        self.enter("close")
        if self.fd < 0:
            return
        rc = self.flush_buffer()
        close(self.fd)
        self.fd = -1
        if rc != 0:
            self.raise_os_error()

    cdef raise_os_error(self):
        raise OSError(self.err_no, f"RecordIO file '{self.path}': write failed at byte "
                      f"offset {self.written}: {os.strerror(self.err_no)}", self.path)

    cdef int flush_buffer(self) noexcept nogil:
        cdef size_t done = 0
        cdef ssize_t r
        while done < self.buf_len:
            r = write(self.fd, self.buf + done, self.buf_len - done)
            if r < 0 and errno == EINTR:
                continue
            if r < 0:
                self.err_no = errno
                return -1
            done += r
        self.written += <int64_t>done
        self.buf_len = 0
        return 0

    cdef int put(self, const char* src, size_t n) noexcept nogil:
        cdef size_t step
        while n > 0:
            if self.buf_len == self.buf_cap and self.flush_buffer() != 0:
                return -1
            step = min(n, self.buf_cap - self.buf_len)
            memcpy(self.buf + self.buf_len, src, step)
            self.buf_len += step
            src += step
            n -= step
        return 0

    cdef int put_part(self, uint32_t cflag, const char* src, size_t n) noexcept nogil:
        cdef uint32_t head[2]
        head[0], head[1] = MAGIC, (cflag << 29) | <uint32_t>n
        if self.put(<const char*>head, 8) != 0:
            return -1
        return self.put(src, n)

    cdef int write_record(self, const char* data, size_t size) noexcept nogil:
        # Cut at every 4-aligned magic number, as dmlc-core's writer does.
        cdef size_t i = 0, part_start = 0, lower = size & ~(<size_t>3)
        cdef uint32_t zero = 0
        while i < lower:
            if load_u32(data + i) == MAGIC:
                if self.put_part(1 if part_start == 0 else 2, data + part_start,
                                 i - part_start) != 0:
                    return -1
                part_start = i + 4
            i += 4
        if self.put_part(3 if part_start != 0 else 0, data + part_start, size - part_start) != 0:
            return -1
        return self.put(<const char*>&zero, padded(size) - size)
