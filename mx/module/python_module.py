"""PythonModule and PythonLossModule: modules written in Python, with no
parameters (MXNet 1.9.1's ``mxnet.module.python_module``)."""
import logging

from mx_ndarray import NDArray

from mx import initializer as init
from mx import ndarray as nd
from mx.module.base_module import BaseModule

__all__ = ["PythonModule", "PythonLossModule"]


class PythonModule(BaseModule):
    """A parameter-free module whose computation is Python code; a subclass
    implements ``_compute_output_shapes``, ``forward``, ``backward``,
    ``get_outputs`` and ``get_input_grads``."""

    def __init__(self, data_names, label_names, output_names, logger=logging):
        super().__init__(logger=logger)
        self._data_names = list(data_names)
        self._label_names = list(label_names) if label_names is not None else None
        self._output_names = list(output_names)
        self._data_shapes = None
        self._label_shapes = None
        self._output_shapes = None

    @property
    def data_names(self):
        return self._data_names

    @property
    def output_names(self):
        return self._output_names

    @property
    def data_shapes(self):
        return self._data_shapes

    @property
    def label_shapes(self):
        return self._label_shapes

    @property
    def output_shapes(self):
        return self._output_shapes

    def get_params(self):
        return {}, {}

    def init_params(self, initializer=init.Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        self.params_initialized = True

    def update(self):
        """No parameters: nothing to update."""

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        if self._label_shapes is None:
            return
        if pre_sliced:
            raise RuntimeError("PythonModule does not support presliced labels")
        eval_metric.update(labels, self.get_outputs())

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write"):
        """Records the shapes (checked against the names) and computes the
        output shapes."""
        if self.binded and not force_rebind:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if grad_req != "write":
            raise ValueError(f"PythonModule.bind: only grad_req 'write' is supported, got "
                             f"{grad_req!r}")
        names = [x[0] for x in data_shapes]
        if names != self._data_names:
            raise ValueError(f"PythonModule.bind: data_shapes name {names}, the module's data "
                             f"names are {self._data_names}")
        if label_shapes is not None:
            names = [x[0] for x in label_shapes]
            if self._label_names is None or names != self._label_names:
                raise ValueError(f"PythonModule.bind: label_shapes name {names}, the "
                                 f"module's label names are {self._label_names}")
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._data_shapes = data_shapes
        self._label_shapes = label_shapes
        self._output_shapes = self._compute_output_shapes()
        self.binded = True

    def _compute_output_shapes(self):
        raise NotImplementedError(f"{type(self).__name__} does not implement _compute_output_shapes()")

    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False):
        """No parameters: no optimizer."""
        self.optimizer_initialized = True


class PythonLossModule(PythonModule):
    """A loss written in Python: forward passes the scores through as the
    output; backward's input gradient is ``grad_func(scores, labels)``."""

    def __init__(self, name="pyloss", data_names=("data",), label_names=("softmax_label",),
                 logger=logging, grad_func=None):
        super().__init__(data_names, label_names, [name + "_output"], logger=logger)
        if len(self._data_names) != 1 or len(self._label_names) != 1:
            raise ValueError(f"PythonLossModule: takes one data and one label, got "
                             f"{self._data_names} and {self._label_names}")
        if grad_func is not None and not callable(grad_func):
            raise TypeError("PythonLossModule: grad_func must be callable")
        self._name = name
        self._scores = None
        self._labels = None
        self._scores_grad = None
        self._grad_func = grad_func

    def _compute_output_shapes(self):
        return [(self._name + "_output", self._data_shapes[0][1])]

    def forward(self, data_batch, is_train=None):
        self._scores = data_batch.data[0]
        if is_train is None:
            is_train = self.for_training
        if is_train:
            self._labels = data_batch.label[0]

    def get_outputs(self, merge_multi_context=True):
        if merge_multi_context is not True:
            raise ValueError("PythonLossModule.get_outputs: only merge_multi_context=True")
        return [self._scores]

    def backward(self, out_grads=None):
        if out_grads is not None:
            raise ValueError("PythonLossModule.backward: a loss takes no out_grads")
        if not self.for_training:
            raise RuntimeError("PythonLossModule.backward: bound with for_training=False")
        self._backward_impl()

    def _backward_impl(self):
        """The input gradient from ``grad_func``; subclasses may override."""
        if self._grad_func is None:
            raise NotImplementedError("PythonLossModule: pass grad_func or override "
                                      "_backward_impl")
        grad = self._grad_func(self._scores, self._labels)
        self._scores_grad = grad if isinstance(grad, NDArray) else nd.array(grad)

    def get_input_grads(self, merge_multi_context=True):
        if merge_multi_context is not True:
            raise ValueError("PythonLossModule.get_input_grads: only merge_multi_context=True")
        return [self._scores_grad]

    def install_monitor(self, mon):
        raise NotImplementedError("PythonLossModule has no executors to monitor")
