"""The dtype table of mx: MXNet's type flags (mshadow::TypeFlag), the one
numbering that NDArray files, symbol JSON (``__dtype__``), call blocks and
the kernel ABI share.  C and Cython see the same flags as the MXDType enum
of include/mx_ops/tblob.h (MX_FLOAT32 0 ... MX_INT64 6; core/_types.pxd
cimports it, src/dtype.h switches on it); tests/test_dtypes.py checks that
the two agree.
"""
import numpy as np

# The dtypes an array may have here, indexed by flag.
DTYPE_NAMES = ("float32", "float64", "float16", "uint8", "int32", "int8", "int64")
DTYPE_FLAGS = {name: flag for flag, name in enumerate(DTYPE_NAMES)}
NP_DTYPES = tuple(np.dtype(name) for name in DTYPE_NAMES)
ITEMSIZES = {name: dt.itemsize for name, dt in zip(DTYPE_NAMES, NP_DTYPES)}

# MXNet's other flags: not array dtypes here, named so that a file or a
# symbol holding one can be read (a symbol's __dtype__) or refused by name.
OTHER_FLAGS = {"bool": 7, "int16": 8, "uint16": 9, "uint32": 10, "uint64": 11, "bfloat16": 12}
MXNET_FLAGS = {**DTYPE_FLAGS, **OTHER_FLAGS}
