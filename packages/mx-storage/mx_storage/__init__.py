"""mx-storage: pooled allocator per device and the resource manager.

Depends on: engine.  Empty until its issue lands: nothing here pretends
to work yet.
"""
__version__ = "0.1.0"
