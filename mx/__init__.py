"""mx: the MXNet 1.x system architecture, rebuilt.

``import mx`` stands where ``import mxnet as mx`` stood.  This meta-package
composes the layers below it; only the parts that exist so far are here.
"""
from mx_engine import Context, MXNetError, cpu, cpu_pinned, current_context, gpu, num_gpus

from mx import base, context, engine, library, nd, operator, profiler, random

__version__ = "0.1.0"
