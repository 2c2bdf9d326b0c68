"""The C-level part of the resource manager, under mx_storage.resource's
Python API: ``TempSlot`` is TempSpace's base (its block and Var as C
fields, ``block`` growing it), ``Copies`` a device's copies of one kind with
their turn, and ``next_copy`` (``next_temp``) the next copy of a kind on a
device, for invokers that take a workspace or a generator on every call
(mx-ndarray's call path cimports them: 0.35 us of Python per call
before).  resource.request and next_copy share the same Copies, so copies
are handed out in one rotation whichever is used."""
from mx_storage._storage import alloc

# (device type, device id, kind) -> Copies: resource.py's own registry
# (its _by_ids), kept here so that next_copy reads it without an import.
by_ids = {}
cdef dict _by_ids = by_ids
cdef int _TEMP_SPACE = 1                # ResourceRequest.TEMP_SPACE
cdef list _last = [None, None, None]    # per kind: the last device's Copies


cdef class TempSlot:
    """TempSpace's C fields and its growth; see resource.TempSpace."""

    def block(self, nbytes):
        """The pool block backing the workspace, grown now to at least
        ``nbytes``: for invokers that hand a kernel the raw pointer when the
        call is pushed.  The caller keeps the returned handle alive until
        the call has run (a later growth replaces the workspace's block, not
        the one a pending call holds), and the call lists ``self.var`` among
        its mutated variables."""
        n = int(nbytes)
        return self.grow(n if n > 0 else 0)

    cdef Handle grow(self, size_t nbytes):
        cdef Handle h = self._handle
        cdef size_t old
        if h is None or h.h.size < nbytes:
            old = 0 if h is None else h.h.size
            # Geometric growth: a slowly rising demand does not reallocate
            # every time; 64 bytes at least.
            self._handle = h = alloc(max(nbytes, 2 * old, 64), self.ctx)
        return h


cdef class Copies:
    """A kind's resources on one device, handed out in turn."""

    def __init__(self, list items, int dev_type=-1, int dev_id=-1):
        self.items = items
        self.turn = 0
        self.dev_type = dev_type
        self.dev_id = dev_id


cdef object next_copy(int kind, int dev_type, int dev_id):
    """The device's next resource of ``kind`` (a ResourceRequest's value),
    as resource.request(ctx, kind) returns it; None before that device's
    first request of the kind (call resource.request then: it creates
    them)."""
    cdef Copies c = _last[kind] if 0 <= kind < 3 else None
    cdef Py_ssize_t i
    if c is None or c.dev_type != dev_type or c.dev_id != dev_id:
        c = _by_ids.get((dev_type, dev_id, kind))
        if c is None:
            return None
        if 0 <= kind < 3:
            _last[kind] = c     # one store: threads racing only miss the cache
    # The turn without a lock, as resource.request: two racing threads may
    # get the same copy, which its engine variable keeps correct.
    i = c.turn
    c.turn = (i + 1) % len(c.items)
    return c.items[i]


cdef TempSlot next_temp(int dev_type, int dev_id):
    """next_copy of TEMP_SPACE."""
    return <TempSlot>next_copy(_TEMP_SPACE, dev_type, dev_id)
