"""``mx.util``: MXNet 1.x's device and environment helpers.

MXNet 1.9.1's NumPy-semantics switches (use_np, set_np, is_np_array,
np_shape, ...) are left out: this project has no ``mx.np`` front end, and
a switch that changes nothing would mislead."""
import os

from mx_engine import Context, num_gpus

__all__ = ["get_gpu_count", "get_gpu_memory", "get_cuda_compute_capability", "getenv",
           "setenv", "set_module", "makedirs"]


def get_gpu_count():
    """Number of visible CUDA devices (0 without CuPy or a driver)."""
    return num_gpus()


def get_gpu_memory(gpu_dev_id):
    """``(free, total)`` bytes of global memory of CUDA device ``gpu_dev_id``."""
    import cupy     # a GPU query: an ImportError without CuPy is the clear answer
    with cupy.cuda.Device(gpu_dev_id):
        return cupy.cuda.runtime.memGetInfo()


def get_cuda_compute_capability(ctx):
    """The compute capability of the GPU of ``ctx`` as an int (8.0 -> 80)."""
    if not isinstance(ctx, Context):
        raise ValueError(f"Expecting a gpu context to get cuda compute capability, "
                         f"while received ctx {ctx}")
    if ctx.device_type != "gpu":
        raise ValueError(f"Expecting a gpu context to get cuda compute capability, "
                         f"while received ctx {ctx}")
    import cupy
    return int(cupy.cuda.Device(ctx.device_id).compute_capability)


def getenv(name):
    """The value of environment variable ``name``, or None."""
    return os.environ.get(name)


def setenv(name, value):
    """Sets (or, with None, removes) environment variable ``name``."""
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = str(value)


def set_module(module):
    """Decorator setting ``__module__`` of a function or class."""
    def decorator(func):
        if module is not None:
            func.__module__ = module
        return func
    return decorator


def makedirs(d):
    """Creates directory ``d`` and its parents; an existing one is fine."""
    os.makedirs(os.path.expanduser(d), exist_ok=True)
