"""The errors of mx_io's RecordIO and image code."""
from mx_engine import MXNetError


class RecordIOError(MXNetError, ValueError):
    """A RecordIO file that cannot be read as one: names the file and the
    byte offset of the bad record (``path``, ``offset``, ``reason``)."""

    def __init__(self, path, offset, reason):
        super().__init__(path, offset, reason)
        self.path, self.offset, self.reason = path, offset, reason

    def __str__(self):
        return f"RecordIO file '{self.path}', byte offset {self.offset}: {self.reason}"


class RecordFormatError(MXNetError, ValueError):
    """A record or image whose contents do not fit what the call expects."""


class MissingKeyError(MXNetError, KeyError):
    """A key that an ``.idx`` file does not hold."""

    def __str__(self):
        return str(self.args[0])
