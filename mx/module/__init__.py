"""``mx.mod`` (``mx.module``): Module and its relatives, the intermediate-level
training API of MXNet 1.9.1 (``mxnet.module``)."""
from mx.module.base_module import BaseModule
from mx.module.bucketing_module import BucketingModule
from mx.module.executor_group import DataParallelExecutorGroup
from mx.module.module import Module
from mx.module.python_module import PythonLossModule, PythonModule
from mx.module.sequential_module import SequentialModule

__all__ = ["BaseModule", "BucketingModule", "DataParallelExecutorGroup", "Module",
           "PythonLossModule", "PythonModule", "SequentialModule"]
