"""``mx.recordio``: MXNet 1.9.1's RecordIO API, byte for byte.

MXRecordIO reads and writes ``.rec`` files sequentially, MXIndexedRecordIO
adds the ``.idx`` text index (``key\\toffset`` per line) for random access,
and pack/unpack/pack_img/unpack_img put an IRHeader (flag, label, id, id2)
and an optional float32 label array in front of a payload.  Files written
here are the bytes MXNet 1.9.1 writes for the same calls, and the other way
round.  The reader and writer are native (``_recordio.pyx``); the image
functions need OpenCV, imported at the first call.
"""
import numbers
import os
import struct
from collections import namedtuple

import numpy as np

from mx_engine import MXNetError
from mx_io import _image_codec
from mx_io._recordio import RecordReader, RecordWriter
from mx_io.errors import MissingKeyError, RecordFormatError, RecordIOError

__all__ = ["MXRecordIO", "MXIndexedRecordIO", "IRHeader", "pack", "unpack", "pack_img",
           "unpack_img", "RecordIOError"]


class MXRecordIO:
    """Reads or writes a RecordIO file sequentially.

    Parameters
    ----------
    uri : str or os.PathLike
        Path to the record file.
    flag : {'r', 'w'}
        'r' reads, 'w' creates (or truncates) and writes.

    Examples
    --------
    >>> record = mx.recordio.MXRecordIO('tmp.rec', 'w')
    >>> for i in range(5):
    ...     record.write(b'record_%d' % i)
    >>> record.close()
    >>> record = mx.recordio.MXRecordIO('tmp.rec', 'r')
    >>> record.read()
    b'record_0'
    """

    def __init__(self, uri, flag):
        self.uri = os.fspath(uri)
        self.flag = flag
        self.pid = None
        self.is_open = False
        self._handle = None
        self.open()

    def open(self):
        """Opens the record file (``reset`` and unpickling call this)."""
        if self.flag == "w":
            self._handle = RecordWriter(self.uri)
            self.writable = True
        elif self.flag == "r":
            self._handle = RecordReader(self.uri)
            self.writable = False
        else:
            raise ValueError(f"{type(self).__name__}: invalid flag {self.flag!r} "
                             f"(expected 'r' or 'w')")
        self.pid = os.getpid()
        self.is_open = True

    def __del__(self):
        if getattr(self, "is_open", False):
            self.close()

    def __getstate__(self):
        """Pickles the path and mode, not the file: closes it here (as MXNet
        does, so a writer's bytes are on disk) and reopens it on unpickling."""
        is_open = self.is_open
        self.close()
        state = dict(self.__dict__)
        state["is_open"] = is_open
        del state["_handle"]
        return state

    def __setstate__(self, state):
        was_open = state["is_open"]
        self.__dict__ = state
        self.is_open = False
        self._handle = None
        if was_open:
            self.open()

    def _check_pid(self, allow_reset=False):
        """A handle opened before a fork must not be shared with the child:
        reopen it there (``allow_reset``) or refuse."""
        if self.pid != os.getpid():
            if allow_reset:
                self.reset()
            else:
                raise MXNetError(f"{type(self).__name__}: '{self.uri}' was opened in process "
                                 f"{self.pid}; forbidden operation in process {os.getpid()} "
                                 f"(multiple processes)")

    def _require(self, caller, writable):
        if not self.is_open:
            raise MXNetError(f"{type(self).__name__}.{caller}: '{self.uri}' is closed")
        if self.writable != writable:
            raise MXNetError(f"{type(self).__name__}.{caller}: '{self.uri}' was opened "
                             f"with flag {self.flag!r}")

    def close(self):
        """Closes the file (flushing a writer); closing twice is harmless."""
        if not self.is_open:
            return
        self._handle.close()
        self.is_open = False
        self.pid = None

    def reset(self):
        """Back to the first record; a writer starts the file afresh (empty)."""
        self.close()
        self.open()

    def write(self, buf):
        """Appends ``buf`` (bytes-like, under 2**29 bytes) as one record."""
        self._require("write", writable=True)
        self._check_pid(allow_reset=False)
        self._handle.write(buf)

    def read(self):
        """The next record as bytes, or None after the last one.

        Raises
        ------
        RecordIOError
            The file is truncated or corrupt here; names the file and offset.
        """
        self._require("read", writable=False)
        self._check_pid(allow_reset=False)
        return self._handle.read()

    def tell(self):
        """Byte offset of the next record to write (or, reading, to read)."""
        if not self.is_open:
            raise MXNetError(f"{type(self).__name__}.tell: '{self.uri}' is closed")
        return self._handle.tell()


class MXIndexedRecordIO(MXRecordIO):
    """A RecordIO file with an ``.idx`` index for random access.

    Parameters
    ----------
    idx_path : str
        Path to the index: one ``key<TAB>offset`` line per record.
    uri : str
        Path to the record file.
    flag : {'r', 'w'}
        Read or write.
    key_type : type
        Converts the index's key strings (``int`` by default).

    Examples
    --------
    >>> record = mx.recordio.MXIndexedRecordIO('tmp.idx', 'tmp.rec', 'w')
    >>> for i in range(5):
    ...     record.write_idx(i, b'record_%d' % i)
    >>> record.close()
    >>> mx.recordio.MXIndexedRecordIO('tmp.idx', 'tmp.rec', 'r').read_idx(3)
    b'record_3'
    """

    def __init__(self, idx_path, uri, flag, key_type=int):
        self.idx_path = os.fspath(idx_path)
        self.idx = {}
        self.keys = []
        self.key_type = key_type
        self.fidx = None
        super().__init__(uri, flag)

    def open(self):
        super().open()
        self.idx = {}
        self.keys = []
        self.fidx = open(self.idx_path, self.flag)
        if not self.writable:
            self._load_index()

    def _load_index(self):
        for lineno, line in enumerate(self.fidx, 1):
            fields = line.strip().split("\t")
            try:
                key, offset = self.key_type(fields[0]), int(fields[1])
            except (ValueError, IndexError, TypeError):
                raise RecordFormatError(
                    f"MXIndexedRecordIO: line {lineno} of index '{self.idx_path}' is "
                    f"{line.rstrip()!r}; expected '<key>\\t<byte offset>'") from None
            self.idx[key] = offset
            self.keys.append(key)

    def close(self):
        """Closes the record file and the index."""
        if not self.is_open:
            return
        super().close()
        self.fidx.close()

    def __getstate__(self):
        state = super().__getstate__()
        state["fidx"] = None
        return state

    def seek(self, idx):
        """Moves the reader to the record of key ``idx``."""
        self._require("seek", writable=False)
        self._check_pid(allow_reset=True)
        try:
            offset = self.idx[idx]
        except KeyError:
            raise MissingKeyError(f"MXIndexedRecordIO: key {idx!r} is not in index "
                                  f"'{self.idx_path}' ({len(self.idx)} keys)") from None
        self._handle.seek(offset)

    def read_idx(self, idx):
        """The record of key ``idx``."""
        self.seek(idx)
        return self.read()

    def write_idx(self, idx, buf):
        """Appends ``buf`` as the record of key ``idx`` and indexes it."""
        key = self.key_type(idx)
        pos = self.tell()
        self.write(buf)
        self.fidx.write(f"{key}\t{pos}\n")
        self.idx[key] = pos
        self.keys.append(key)


IRHeader = namedtuple("HEADER", ["flag", "label", "id", "id2"])
IRHeader.__doc__ = """The header pack() puts in front of a record.

Parameters
----------
flag : int
    0 for a scalar label; pack() sets it to the number of labels of an array.
label : float or array of float
    The label(s).
id : int
    A unique id of the record (uint64).
id2 : int
    Higher bits of the id, usually 0.
"""

# uint32 flag, float32 label, uint64 id, uint64 id2, native alignment: 24
# bytes, as MXNet's C++ ImageRecordIO::Header.
_IR_FORMAT = "IfQQ"
_IR_SIZE = struct.calcsize(_IR_FORMAT)


def pack(header, s):
    """``header`` and payload ``s`` as one record (bytes).

    A scalar label goes into the header (flag 0); an array label is stored
    as float32 after it, with flag its size and the header's label 0.
    """
    header = IRHeader(*header)
    if isinstance(header.label, numbers.Number):
        header = header._replace(flag=0)
    else:
        label = np.asarray(header.label, dtype=np.float32)
        header = header._replace(flag=label.size, label=0)
        s = label.tobytes() + s
    try:
        head = struct.pack(_IR_FORMAT, *header)
    except struct.error as err:
        raise RecordFormatError(f"pack: header {tuple(header)} does not fit "
                                f"(flag uint32, label float32, id and id2 uint64): {err}") from None
    return head + s


def unpack(s):
    """(IRHeader, payload) of a record made by pack(); an array label comes
    back as a float32 NumPy array."""
    if len(s) < _IR_SIZE:
        raise RecordFormatError(f"unpack: a record of {len(s)} bytes is shorter than the "
                                f"{_IR_SIZE}-byte IRHeader")
    header = IRHeader(*struct.unpack(_IR_FORMAT, s[:_IR_SIZE]))
    s = s[_IR_SIZE:]
    if header.flag > 0:
        if header.flag * 4 > len(s):
            raise RecordFormatError(
                f"unpack: the header's flag {header.flag} announces {header.flag} float32 "
                f"labels ({header.flag * 4} bytes) but only {len(s)} bytes follow the header")
        header = header._replace(label=np.frombuffer(s, np.float32, header.flag))
        s = s[header.flag * 4:]
    return header, s


def unpack_img(s, iscolor=-1):
    """(IRHeader, image) of a record made by pack_img(): the image as
    OpenCV's imdecode gives it, BGR (iscolor: 1 colour, 0 grey, -1 as stored)."""
    header, s = unpack(s)
    return header, _image_codec.decode(s, iscolor, caller="unpack_img")


def pack_img(header, img, quality=95, img_fmt=".jpg"):
    """``img`` (BGR uint8) encoded as ``img_fmt`` and packed with ``header``.

    Parameters
    ----------
    quality : int
        JPEG quality 1-100, or PNG compression level 0-9.
    img_fmt : str
        '.jpg' / '.jpeg' or '.png' (or any extension OpenCV encodes).
    """
    return pack(header, _image_codec.encode(img, img_fmt, quality, caller="pack_img"))
