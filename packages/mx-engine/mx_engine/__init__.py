"""mx-engine: contexts and the dependency engine (with its profiler).

The lowest layer of the mx packages; it depends on nothing of ours.
"""
from mx_engine import engine, profiler
from mx_engine._context import Context, cpu, cpu_pinned, current_context, gpu, num_gpus
from mx_engine.base import MXNetError
from mx_engine.engine import FnProperty, RunContext, Var

__version__ = "0.1.0"

__all__ = ["Context", "cpu", "cpu_pinned", "gpu", "current_context", "num_gpus",
           "engine", "profiler", "FnProperty", "RunContext", "Var", "MXNetError",
           "__version__"]
