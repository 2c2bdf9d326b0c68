"""mx: the MXNet 1.x system architecture, rebuilt.

``import mx`` stands where ``import mxnet as mx`` stood.  This meta-package
composes the layers below it into MXNet 1.9.1's module tree; only the parts
that exist so far are here.
"""
from mx_engine import Context, MXNetError, cpu, cpu_pinned, current_context, gpu, num_gpus

import sys as _sys

from mx import (attribute, base, context, engine, executor, library, name, ndarray, operator,
                profiler, random, runtime, symbol, util, viz)
from mx.attribute import AttrScope
from mx.executor import Executor
from mx import test_utils     # noqa: E402  (MXNet's mxnet.test_utils)
from mx import autograd       # noqa: E402  (MXNet's mxnet.autograd)
from mx import recordio       # noqa: E402  (MXNet's mxnet.recordio)
from mx import image          # noqa: E402  (MXNet's mxnet.image)
from mx import lr_scheduler   # noqa: E402  (MXNet's mxnet.lr_scheduler)
from mx import optimizer      # noqa: E402  (MXNet's mxnet.optimizer)
from mx import initializer, model  # noqa: E402  (the training layer)
from mx import metric, monitor, callback  # noqa: E402
init = initializer
mon = monitor


def _alias(alias, module):
    """Registers ``module`` and its loaded sub-modules under ``alias`` too,
    so ``import mx.nd.random`` gives the same objects as ``mx.ndarray``'s."""
    prefix = module.__name__
    for key, mod in list(_sys.modules.items()):
        if key == prefix or key.startswith(prefix + "."):
            _sys.modules[alias + key[len(prefix):]] = mod


nd = ndarray
sym = symbol
_alias(__name__ + ".nd", ndarray)
_alias(__name__ + ".sym", symbol)

from mx_io import io          # noqa: E402  (MXNet's mxnet.io)
_alias(__name__ + ".io", io)

from mx import kvstore        # noqa: E402  (MXNet's mxnet.kvstore)
kv = kvstore
_alias(__name__ + ".kv", kvstore)

# Module imports optimizer, initializer, metric and model: it comes after them.
from mx import module         # noqa: E402  (MXNet's mxnet.module)
mod = module
_alias(__name__ + ".mod", module)

__version__ = "0.1.0"
from mx import _kvstore_server  # noqa: E402,F401  (a distributed job's server ranks serve here; last)
