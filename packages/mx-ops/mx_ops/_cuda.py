"""What the GPU twins share: the C names of our dtypes, RawModules compiled
once per source (CuPy caches the binary per device and on disk) and a
grid-stride launch.  Each _*_gpu module also offers ``compile_cases()``:
its kernel sources, which tests/test_gpu_sources.py compiles with NVRTC
on machines without a GPU.  Importing this module without CuPy raises
ImportError."""
import functools

import cupy

# The C type CuPy's headers (cupy/carray.cuh) use for each dtype name; the
# raw kernels are templates instantiated with these.
CTYPES = {"float32": "float", "float64": "double", "float16": "float16",
          "uint8": "unsigned char", "int8": "signed char", "int32": "int",
          "int64": "long long"}

_BLOCK = 256
# Enough blocks to fill any current GPU; the grid-stride loop covers the rest.
_MAX_BLOCKS = 65535


def raw_module(source, names):
    """A function name -> kernel of a templated RawModule, compiled on first
    use with every instantiation in ``names`` (one NVRTC run for all)."""
    @functools.cache
    def module():
        return cupy.RawModule(code=source, name_expressions=tuple(names))

    return lambda name: module().get_function(name)


def launch(kernel, n, args):
    """Runs a grid-stride kernel over ``n`` items on the current stream."""
    if n == 0:
        return
    blocks = min((n + _BLOCK - 1) // _BLOCK, _MAX_BLOCKS)
    kernel((blocks,), (_BLOCK,), args)
