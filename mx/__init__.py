"""mx: the MXNet 1.x system architecture, rebuilt.

``import mx`` stands where ``import mxnet as mx`` stood.  This meta-package
composes the layers below it; only the parts that exist so far are here.
"""
from mx_engine import Context, MXNetError, cpu, cpu_pinned, current_context, gpu, num_gpus

import sys as _sys

from mx import (attribute, base, context, engine, library, name, nd, operator, profiler,
                random, symbol, viz)
from mx.attribute import AttrScope
from mx_graph.executor import Executor

sym = symbol
_sys.modules[__name__ + ".sym"] = symbol

__version__ = "0.1.0"
