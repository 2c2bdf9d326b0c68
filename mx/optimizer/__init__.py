"""Optimizers (MXNet 1.9.1's ``mxnet.optimizer``): the Optimizer base class
and registry, every optimizer of MXNet 1.9.1 (one module per family), the
Updater, states saved without pickle, and optimizers as JSON."""
from mx.ndarray import abs as NDabs  # noqa: N812  (MXNet exports it here)
from mx.optimizer.optimizer import Optimizer, create, register
from mx.optimizer.sgd import DCASGD, NAG, SGD, SGLD, Signum, Test, ccSGD
from mx.optimizer.large_batch import LARS, LBSGD
from mx.optimizer.adam import FTML, LAMB, Adam, Adamax, Nadam
from mx.optimizer.adaptive import AdaDelta, AdaGrad, Ftrl, RMSProp
from mx.optimizer.updater import Updater, get_updater
from mx.optimizer.serialization import from_json
from mx.optimizer import states

__all__ = [
    "AdaDelta", "AdaGrad", "Adam", "Adamax", "DCASGD", "FTML", "Ftrl", "LARS", "LBSGD",
    "NAG", "NDabs", "Nadam", "Optimizer", "RMSProp", "SGD", "SGLD", "Signum", "LAMB",
    "Test", "Updater", "ccSGD", "create", "get_updater", "register", "from_json",
]
