"""``mx.context``: devices, as in MXNet 1.x."""
from mx_engine._context import Context, cpu, cpu_pinned, current_context, gpu, num_gpus

from mx.util import get_gpu_memory

__all__ = ["Context", "cpu", "cpu_pinned", "gpu", "current_context", "num_gpus",
           "gpu_memory_info"]


def gpu_memory_info(device_id=0):
    """``(free, total)`` bytes of global memory of CUDA device ``device_id``."""
    return get_gpu_memory(device_id)
