"""The distributed store's messages: fixed-size uint64 headers and raw
array buffers, all moved with mpi4py's buffer calls (nothing pickled).

A worker's request is a header on TAG_REQUEST to a server, then, for a
request that carries data, the bytes on the request's own data tag, in
chunks of CHUNK_BYTES (MPI keeps messages of one tag in order, so both
sides post the chunks of a buffer in order: the server sums and answers
chunk i while chunk i+1 arrives).  The
server answers on the request's reply tag with a reply header (whose tail
holds an error text when it failed), then, for PULL/PUSHPULL, the bytes on
the reply-data tag, which the worker had posted a receive for before
asking, straight into the destination array.

A FAILED reply with word ARG set says the server is unusable (every later
request would fail too); without it only that request failed.  A server
that stops after a failure also sends each worker an ABORT header (error
text in its tail) on TAG_ABORT, which every worker keeps a receive posted
for, so calls waiting on other requests fail at once too.
"""
import numpy as np

# Header words.
OP, KEY, SEQ, NBYTES, DTYPE, ARG, ARG2 = range(7)
HEADER_WORDS = 64                      # 512 bytes: 8 words, then error text
TEXT_OFFSET = 8 * 8
TEXT_BYTES = HEADER_WORDS * 8 - TEXT_OFFSET

# Request kinds.
INIT, PUSH, PULL, PUSHPULL, BARRIER, COMMAND, STOP = range(1, 8)
OP_NAMES = {INIT: "init", PUSH: "push", PULL: "pull", PUSHPULL: "pushpull",
            BARRIER: "barrier", COMMAND: "command", STOP: "stop"}
# row_sparse requests (their data is a row message, _dist_rows.py; ARG = rows).
PUSH_ROWS, PULL_ROWS = 8, 9
OP_NAMES.update({PUSH_ROWS: "row_sparse push", PULL_ROWS: "row_sparse_pull"})
# A worker asks a server on its host for a key's shared memory (the answer
# data: the server's pid, the segment's descriptor, its value bytes, the
# nonce written in it; 0 bytes when it has none).
SHM_ATTACH = 10
OP_NAMES[SHM_ATTACH] = "shared-memory attach"
# Flags in the ARG word of INIT, PUSH, PULL and PUSHPULL.
ARG_COMPRESSED = 1     # the data are 2bit words
ARG_SHM = 2            # the data move through the key's shared memory: the
                       # request's and answer's data messages are one token
                       # per chunk (the answer's names the value buffer); on
                       # INIT (whose data are a message) it asks the server
                       # to make the key's shared memory
ARG_REDUCE = 4         # with ARG_SHM on a PUSH or PUSHPULL: the workers sum the
                       # round (_dist_shm.py); this worker copied in only the
                       # chunks it does not own
# The tokens of a shared-memory transfer (one uint64 each).  A worker's: the
# index of a chunk it copied into its slot, or, with SUMMED, of a chunk it
# owns and summed.  The server's answer tokens: chunk << 8 | kind << 1 |
# value buffer, the kind one of
SUMMED = 1 << 32
COPY, SKIP, REDUCE, REDUCE_OUT = range(4)
# COPY: copy the chunk out of the buffer; SKIP: the worker wrote it itself
# (REDUCE_OUT); REDUCE: sum the chunk (which this worker owns) into the
# buffer; REDUCE_OUT: into the buffer and the worker's output.  COPY and
# SKIP answer a read (every chunk gets one); REDUCE* are instructions.


def answer_token(kind, buffer, chunk):
    return int(chunk) << 8 | int(kind) << 1 | int(buffer)


def parse_answer(token):
    """(kind, value buffer, chunk) of an answer token."""
    token = int(token)
    return (token >> 1) & 3, token & 1, token >> 8
# Reply kinds.
OK, FAILED = 1, 2
ABORT = 3
# Word ARG of a FAILED reply.
REQUEST_FAILED, SERVER_FAILED = 0, 1

TAG_REQUEST = 1
TAG_ABORT = 2
_TAG_BASE = 16

# Large enough that the per-message costs (a rendezvous and its answer, a
# test and a callback on each side) stay small against the copy: with 1 MiB
# chunks a 16 MB pushpull cost the server 6.0 ms of CPU, with 4 MiB 4.0-4.5 ms
# (benchmarks/compare_kvstore_dist.py); small enough that the server still
# sums and answers chunk i while chunk i+1 arrives.
CHUNK_BYTES = 4 << 20


def chunks(nbytes):
    """The (start, stop) byte ranges a buffer of ``nbytes`` moves in."""
    return [(lo, min(lo + CHUNK_BYTES, nbytes)) for lo in range(0, nbytes, CHUNK_BYTES)] \
        or [(0, 0)]


def post_chunks(post, buf, tag):
    """``post(piece, tag)`` (an Isend or Irecv) for each chunk of the flat
    contiguous array ``buf``; the requests, in order."""
    raw = buf.view(np.uint8)
    return [post(raw[lo:hi], tag) for lo, hi in chunks(raw.nbytes)]


DTYPES = ("float32", "float64", "float16", "uint8", "int32", "int8", "int64")


def dtype_code(dtype):
    name = np.dtype(dtype).name
    if name not in DTYPES:
        raise TypeError(f"kvstore: dtype {name} cannot be sent (supported: {', '.join(DTYPES)})")
    return DTYPES.index(name)


def header(op=0, key=0, seq=0, nbytes=0, dtype=0, arg=0, arg2=0):
    h = np.zeros(HEADER_WORDS, np.uint64)
    h[:7] = (op, key, seq, nbytes, dtype, arg, arg2)
    return h


def set_text(h, text):
    raw = text.encode("utf-8", "replace")[:TEXT_BYTES]
    view = h.view(np.uint8)
    view[TEXT_OFFSET:TEXT_OFFSET + len(raw)] = np.frombuffer(raw, np.uint8)
    view[TEXT_OFFSET + len(raw):] = 0


def get_text(h):
    return bytes(h.view(np.uint8)[TEXT_OFFSET:]).rstrip(b"\0").decode("utf-8", "replace")


class Tags:
    """Per-request tags (reply header, reply data, request data), cycling
    below the MPI library's tag bound; a worker never has that many
    requests in flight."""

    def __init__(self, tag_ub):
        self.cycle = (int(tag_ub) - _TAG_BASE) // 3

    def of(self, seq):
        base = _TAG_BASE + 3 * (seq % self.cycle)
        return base, base + 1, base + 2


def moves_shared(head):
    """Whether the request's data move through the key's shared memory (a
    dense PUSH, PULL or PUSHPULL with ARG_SHM; row requests' ARG counts rows)."""
    return int(head[OP]) in (PUSH, PULL, PUSHPULL) and bool(int(head[ARG]) & ARG_SHM)
