cdef enum DeviceType:
    DEV_CPU = 1
    DEV_GPU = 2
    DEV_CPU_PINNED = 3
    DEV_CPU_SHARED = 5

# Device ids index fixed tables in the engine.
cdef enum:
    MAX_DEVICE_ID = 64

cdef class Context:
    cdef readonly int device_typeid
    cdef readonly int device_id
    cdef object _old_ctx
