"""``mx.context``: devices, as in MXNet 1.x."""
from mx_engine._context import Context, cpu, cpu_pinned, current_context, gpu, num_gpus

__all__ = ["Context", "cpu", "cpu_pinned", "gpu", "current_context", "num_gpus"]
