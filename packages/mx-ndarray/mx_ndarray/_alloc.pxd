# New arrays: allocated, over foreign memory, copied between devices.
from mx_engine._context cimport Context
from mx_ndarray._ndarray cimport NDArray

cdef NDArray _empty(tuple shape, str dtype, Context ctx, str api=*, int output=*)
cdef NDArray _empty_flag(tuple shape, int flag, Context ctx, str api=*, int output=*)
cdef NDArray _copy_device(NDArray src, NDArray dst)
