"""A worker's side of one dense transfer through a key slice's shared
memory (_dist_shm.py): which chunks it copies into its slot, how many
answer tokens it waits for, and what each token makes it do (copy a chunk
out of a value buffer, or sum a chunk it owns).  The transport
(``Client.request``) posts the messages; this object does the memory work:
``fill`` on the engine thread that posted the call, ``on_token`` on the
transport thread."""
import numpy as np

from mx_kvstore import _native
from mx_kvstore import _dist_shm as shm
from mx_kvstore import _dist_wire as wire

# Every copy and sum here writes memory that this core does not read again
# and another process reads next: from 1 MiB up it uses streaming stores
# (kv_stream.h: no read for ownership of the lines written, and the other
# core's reads are not served out of this core's cache).  A 16 MB pushpull
# of 2 workers: 3.35 ms against 6.38 with NumPy's copies and sum
# (benchmarks/compare_kvstore_dist.py, README).  Other dtypes and more than
# two workers sum with NumPy in blocks that stay in a core's L2 cache (two
# sources and the sum: 768 KiB), so the second output is written from cache.
_BLOCK_BYTES = 256 << 10


def _copy(dst, src):
    _native.stream_copy_host(dst.view(np.uint8), src.view(np.uint8))


class ShmTransfer:
    """A push (``src``), pull (``into``) or pushpull (both) of one slice,
    flat arrays of the key's dtype, through ``seg`` for worker ``worker``;
    ``key``: the server's key.  ``reduce``: a push of a worker-summed round
    (the worker copies in only the chunks it does not own).  A push waits
    here (up to ``limit_s``) until the server summed this worker's previous
    push out of its slot."""

    def __init__(self, seg, worker, key, src=None, into=None, reduce=False, limit_s=None):
        data = src if src is not None else into
        self.seg, self.worker, self.src, self.into = seg, worker, src, into
        self.nbytes = data.nbytes
        self.reduce = bool(reduce and src is not None)
        self._spans = [(lo // data.itemsize, hi // data.itemsize)
                       for lo, hi in wire.chunks(data.nbytes)]
        n = len(self._spans)
        owned = ({i for i in range(n) if shm.owner(key, i, seg.num_workers) == worker}
                 if self.reduce else set())
        self.fills = [] if src is None else [i for i in range(n) if i not in owned]
        # the token each chunk's fill or sum sends (Client.request)
        self.tokens = np.array([i | (wire.SUMMED if i in owned else 0) for i in range(n)],
                               np.uint64)
        self.owned = len(owned)
        # the server's tokens: one per chunk for a read, one per owned chunk to sum
        self.answers = (0 if into is None else n) + len(owned)
        self._left = n          # reads (COPY or SKIP) still to come
        if src is not None:
            seg.claim_slot(worker, limit_s)
            self._slot = seg.slot(worker, src.dtype)

    def fill(self, i):
        """Copies chunk ``i`` into this worker's slot."""
        lo, hi = self._spans[i]
        _copy(self._slot[lo:hi], self.src[lo:hi])

    def on_token(self, token):
        """Carries out the server's answer token; the chunk this worker
        summed (its SUMMED token is then due), else None."""
        kind, b, i = wire.parse_answer(token)
        summing = kind in (wire.REDUCE, wire.REDUCE_OUT)
        if i >= len(self._spans) or (summing and not int(self.tokens[i]) & wire.SUMMED) \
                or (kind != wire.REDUCE and self.into is None):
            raise RuntimeError(f"kvstore shared memory: unexpected answer token {token:#x} for a "
                               f"{'push' if self.into is None else 'pull'} of "
                               f"{len(self._spans)} chunks")
        if summing:
            self._sum(i, b, kind == wire.REDUCE_OUT)
            return i
        if kind == wire.COPY:
            lo, hi = self._spans[i]
            _copy(self.into[lo:hi], self.seg.value(b, self.into.dtype)[lo:hi])
        self._left -= 1
        if self._left == 0:
            # the server may write buffer b again once every reader is done
            self.seg.finish_read(self.worker, b)
        return None

    def _sum(self, i, b, out):
        """Chunk ``i`` of every worker's push (this worker's own value, the
        others' slots, in worker order) into value buffer ``b``, and into
        this worker's output with ``out``."""
        seg, dtype = self.seg, self.src.dtype
        sources = [self.src if w == self.worker else seg.slot(w, dtype)
                   for w in range(seg.num_workers)]
        total = seg.value(b, dtype)
        lo, hi = self._spans[i]
        if len(sources) == 2 and dtype == np.float32:
            _native.stream_add2_f32_host(sources[0][lo:hi], sources[1][lo:hi], total[lo:hi],
                                         self.into[lo:hi] if out else None)
            return
        step = max(1, _BLOCK_BYTES // dtype.itemsize)
        for a in range(lo, hi, step):
            part = slice(a, min(a + step, hi))
            if len(sources) == 1:
                np.copyto(total[part], sources[0][part])
            else:
                np.add(sources[0][part], sources[1][part], out=total[part])
                for other in sources[2:]:
                    np.add(total[part], other[part], out=total[part])
            if out:
                np.copyto(self.into[part], total[part])
