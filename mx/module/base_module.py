"""BaseModule: the interface every module offers and the training loop
built on it (``fit``, ``score``, ``predict``; MXNet 1.9.1's
``mxnet.module.base_module``)."""
import logging
import time
import warnings

import numpy as np

from mx_engine import cpu
from mx_io.io import DataBatch, DataDesc, DataIter
from mx_ndarray import NDArray, concatenate

from mx import initializer as init
from mx import metric as _metric
from mx import ndarray as nd
from mx.model import BatchEndParam

__all__ = ["BaseModule"]


def _as_list(obj):
    return obj if isinstance(obj, list) else [obj]


def _check_input_names(symbol, names, typename, throw):
    """Each of ``names`` must be an argument of ``symbol``; the error (or
    warning) lists the arguments that look like inputs."""
    args = symbol.list_arguments()
    for name in names:
        if name in args:
            continue
        candidates = [a for a in args if not a.endswith(("_weight", "_bias", "_gamma",
                                                          "_beta"))]
        msg = (f"Module: you created Module with {typename}={names}, but input with name "
               f"'{name}' is not found in symbol.list_arguments(). Did you mean one of:\n\t"
               + "\n\t".join(candidates))
        if throw:
            raise ValueError(msg)
        logging.warning(msg)


def _parse_data_desc(data_names, label_names, data_shapes, label_shapes):
    """DataDescs for the data and labels, checked against the names the
    module was created with."""
    data_shapes = [x if isinstance(x, DataDesc) else DataDesc(*x) for x in data_shapes]
    _check_names_match(data_names, data_shapes, "data", True)
    if label_shapes is not None:
        label_shapes = [x if isinstance(x, DataDesc) else DataDesc(*x) for x in label_shapes]
        _check_names_match(label_names, label_shapes, "label", False)
    else:
        _check_names_match(label_names, [], "label", False)
    return data_shapes, label_shapes


def _check_names_match(data_names, data_shapes, name, throw):
    actual = [x[0] for x in data_shapes]
    if sorted(data_names) != sorted(actual):
        msg = (f"Module: data provided by {name}_shapes don't match names specified by "
               f"{name}_names ({data_shapes} vs. {data_names})")
        if throw:
            raise ValueError(msg)
        logging.warning(msg)


class BaseModule:
    """The module interface: bind, init_params, init_optimizer, forward,
    backward, update, and the loops ``fit``, ``score``, ``predict`` built
    on them. Subclasses implement the abstract part."""

    def __init__(self, logger=logging):
        self.logger = logger
        self.binded = False
        self.for_training = False
        self.inputs_need_grad = False
        self.params_initialized = False
        self.optimizer_initialized = False
        self._symbol = None
        self._prepare_warned = False

    # -- high-level loops ------------------------------------------------
    def forward_backward(self, data_batch):
        """A forward pass in training mode, then the backward pass."""
        self.forward(data_batch, is_train=True)
        self.backward()

    def score(self, eval_data, eval_metric, num_batch=None, batch_end_callback=None,
              score_end_callback=None, reset=True, epoch=0, sparse_row_id_fn=None):
        """Runs the module over ``eval_data`` and returns the metric's
        ``get_name_value()``."""
        self._check_ready("score")
        if reset:
            eval_data.reset()
        if not isinstance(eval_metric, _metric.EvalMetric):
            eval_metric = _metric.create(eval_metric)
        eval_metric.reset()
        actual_num_batch = 0
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            if isinstance(eval_batch, list):
                self.update_metric(eval_metric, [b.label for b in eval_batch], pre_sliced=True)
            else:
                self.update_metric(eval_metric, eval_batch.label)
            if batch_end_callback is not None:
                params = BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric,
                                       locals=locals())
                for callback in _as_list(batch_end_callback):
                    callback(params)
            actual_num_batch += 1
        if score_end_callback:
            params = BatchEndParam(epoch=epoch, nbatch=actual_num_batch,
                                   eval_metric=eval_metric, locals=locals())
            for callback in _as_list(score_end_callback):
                callback(params)
        return eval_metric.get_name_value()

    def iter_predict(self, eval_data, num_batch=None, reset=True, sparse_row_id_fn=None):
        """Yields ``(outputs, nbatch, batch)`` per batch, the padding cut off."""
        self._check_ready("iter_predict")
        if reset:
            eval_data.reset()
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            pad = eval_batch.pad or 0
            outputs = [out[0:out.shape[0] - pad] for out in self.get_outputs()]
            yield outputs, nbatch, eval_batch

    def predict(self, eval_data, num_batch=None, merge_batches=True, reset=True,
                always_output_list=False, sparse_row_id_fn=None):
        """The outputs over ``eval_data`` (a DataIter, or one NDArray /
        NumPy batch), merged over batches unless ``merge_batches=False``."""
        self._check_ready("predict")
        if isinstance(eval_data, (NDArray, np.ndarray)):
            if isinstance(eval_data, np.ndarray):
                eval_data = nd.array(eval_data)
            self.forward(DataBatch([eval_data]))
            return self.get_outputs()[0]
        if not isinstance(eval_data, DataIter):
            raise ValueError(f"predict: eval_data must be an NDArray, a NumPy array or a "
                             f"DataIter, got {type(eval_data).__name__}")
        if reset:
            eval_data.reset()
        output_list = []
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            pad = eval_batch.pad or 0
            output_list.append([out[0:out.shape[0] - pad].copy()
                                for out in self.get_outputs()])
        if not output_list or not merge_batches:
            return output_list
        num_outputs = len(output_list[0])
        if any(len(outs) != num_outputs for outs in output_list):
            raise ValueError("predict: the batches have different numbers of outputs; pass "
                             "merge_batches=False")
        merged = [concatenate([outs[i] for outs in output_list]) for i in range(num_outputs)]
        if num_outputs == 1 and not always_output_list:
            return merged[0]
        return merged

    def fit(self, train_data, eval_data=None, eval_metric="acc", epoch_end_callback=None,
            batch_end_callback=None, kvstore="local", optimizer="sgd",
            optimizer_params=(("learning_rate", 0.01),), eval_end_callback=None,
            eval_batch_end_callback=None, initializer=init.Uniform(0.01), arg_params=None,
            aux_params=None, allow_missing=False, force_rebind=False, force_init=False,
            begin_epoch=0, num_epoch=None, validation_metric=None, monitor=None,
            sparse_row_id_fn=None):
        """Trains the parameters on ``train_data`` for epochs
        ``begin_epoch .. num_epoch - 1`` (MXNet 1.9.1's arguments).

        Each step pushes forward, backward, the update and the metric's
        update to the engine and returns; nothing waits on the results
        except what a callback or the epoch's log reads. The next batch is
        fetched while the step runs.
        """
        if num_epoch is None:
            raise ValueError("fit: please specify number of epochs (num_epoch)")
        self.bind(data_shapes=train_data.provide_data, label_shapes=train_data.provide_label,
                  for_training=True, force_rebind=force_rebind)
        if monitor is not None:
            self.install_monitor(monitor)
        self.init_params(initializer=initializer, arg_params=arg_params,
                         aux_params=aux_params, allow_missing=allow_missing,
                         force_init=force_init)
        self.init_optimizer(kvstore=kvstore, optimizer=optimizer,
                            optimizer_params=optimizer_params)
        if validation_metric is None:
            validation_metric = eval_metric
        if not isinstance(eval_metric, _metric.EvalMetric):
            eval_metric = _metric.create(eval_metric)

        for epoch in range(begin_epoch, num_epoch):
            tic = time.time()
            eval_metric.reset()
            nbatch = 0
            data_iter = iter(train_data)
            end_of_batch = False
            next_data_batch = next(data_iter)
            eval_name_vals = []
            while not end_of_batch:
                data_batch = next_data_batch
                if monitor is not None:
                    monitor.tic()
                self.forward_backward(data_batch)
                self.update()
                if isinstance(data_batch, list):
                    self.update_metric(eval_metric, [b.label for b in data_batch],
                                       pre_sliced=True)
                else:
                    self.update_metric(eval_metric, data_batch.label)
                try:
                    next_data_batch = next(data_iter)
                    self.prepare(next_data_batch, sparse_row_id_fn=sparse_row_id_fn)
                except StopIteration:
                    end_of_batch = True
                if monitor is not None:
                    monitor.toc_print()
                if end_of_batch:
                    eval_name_vals = eval_metric.get_global_name_value()
                if batch_end_callback is not None:
                    params = BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric,
                                           locals=locals())
                    for callback in _as_list(batch_end_callback):
                        callback(params)
                nbatch += 1
            for name, val in eval_name_vals:
                self.logger.info("Epoch[%d] Train-%s=%f", epoch, name, val)
            self.logger.info("Epoch[%d] Time cost=%.3f", epoch, time.time() - tic)

            # Devices' copies are averaged and written back, so they agree.
            arg_params_now, aux_params_now = self.get_params()
            self.set_params(arg_params_now, aux_params_now)
            if epoch_end_callback is not None:
                for callback in _as_list(epoch_end_callback):
                    callback(epoch, self.symbol, arg_params_now, aux_params_now)
            if eval_data:
                res = self.score(eval_data, validation_metric,
                                 score_end_callback=eval_end_callback,
                                 batch_end_callback=eval_batch_end_callback, epoch=epoch)
                for name, val in res:
                    self.logger.info("Epoch[%d] Validation-%s=%f", epoch, name, val)
            train_data.reset()

    def _check_ready(self, what):
        if not (self.binded and self.params_initialized):
            raise RuntimeError(f"{what}: call bind and init_params first (binded="
                               f"{self.binded}, params_initialized={self.params_initialized})")

    # -- symbol and names ------------------------------------------------
    @property
    def data_names(self):
        raise NotImplementedError(f"{type(self).__name__} must define the property 'data_names'")

    @property
    def output_names(self):
        raise NotImplementedError(f"{type(self).__name__} must define the property 'output_names'")

    @property
    def data_shapes(self):
        raise NotImplementedError(f"{type(self).__name__} must define the property 'data_shapes'")

    @property
    def label_shapes(self):
        raise NotImplementedError(f"{type(self).__name__} must define the property 'label_shapes'")

    @property
    def output_shapes(self):
        raise NotImplementedError(f"{type(self).__name__} does not implement output_shapes()")

    @property
    def symbol(self):
        return self._symbol

    # -- parameters ------------------------------------------------------
    def get_params(self):
        raise NotImplementedError(f"{type(self).__name__} does not implement get_params()")

    def init_params(self, initializer=init.Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        raise NotImplementedError(f"{type(self).__name__} does not implement init_params()")

    # A module that can copy a partial set of parameters straight to its
    # devices defines _copy_params(arg_params, aux_params, force_init,
    # allow_extra); set_params with allow_missing then uses it.
    _copy_params = None

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True,
                   allow_extra=False):
        """Sets the parameters (``init_params`` with these values and no
        initializer; ``force_init`` by default).  With ``allow_missing`` a
        module that has ``_copy_params`` copies only the given ones."""
        if not allow_missing or self._copy_params is None:
            self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                             allow_missing=allow_missing, force_init=force_init,
                             allow_extra=allow_extra)
            return
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. "
                          "set_params call ignored.", stacklevel=2)
            return
        self._copy_params(arg_params, aux_params, force_init, allow_extra)
        self._params_dirty = True
        self.params_initialized = True

    def save_params(self, fname):
        """Writes the parameters as MXNet's ``arg:``/``aux:`` keyed NDArray file."""
        arg_params, aux_params = self.get_params()
        save_dict = {f"arg:{k}": v.as_in_context(cpu()) for k, v in arg_params.items()}
        save_dict.update({f"aux:{k}": v.as_in_context(cpu()) for k, v in aux_params.items()})
        nd.save(fname, save_dict)

    def load_params(self, fname):
        """Reads parameters written by ``save_params`` (ours or MXNet's)."""
        arg_params, aux_params = {}, {}
        for key, value in nd.load(fname).items():
            kind, _, name = key.partition(":")
            if kind == "arg":
                arg_params[name] = value
            elif kind == "aux":
                aux_params[name] = value
            else:
                raise ValueError(f"load_params: {fname} holds key '{key}', which is neither "
                                 f"'arg:<name>' nor 'aux:<name>'")
        self.set_params(arg_params, aux_params)

    def get_states(self, merge_multi_context=True):
        if not (self.binded and self.params_initialized):
            raise RuntimeError("get_states: call bind and init_params first")
        return []

    def set_states(self, states=None, value=None):
        if not (self.binded and self.params_initialized):
            raise RuntimeError("set_states: call bind and init_params first")
        if states or value:
            raise RuntimeError("set_states: this module has no states")

    def install_monitor(self, mon):
        raise NotImplementedError(f"{type(self).__name__} does not implement install_monitor()")

    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Called before each batch is run (pulls row_sparse parameters
        where a subclass needs them)."""
        if sparse_row_id_fn is not None and not self._prepare_warned:
            self.logger.warning("sparse_row_id_fn is not invoked for BaseModule.")
            self._prepare_warned = True

    # -- computation -----------------------------------------------------
    def forward(self, data_batch, is_train=None):
        raise NotImplementedError(f"{type(self).__name__} does not implement forward()")

    def backward(self, out_grads=None):
        raise NotImplementedError(f"{type(self).__name__} does not implement backward()")

    def get_outputs(self, merge_multi_context=True):
        raise NotImplementedError(f"{type(self).__name__} does not implement get_outputs()")

    def get_input_grads(self, merge_multi_context=True):
        raise NotImplementedError(f"{type(self).__name__} does not implement get_input_grads()")

    def update(self):
        raise NotImplementedError(f"{type(self).__name__} does not implement update()")

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        raise NotImplementedError(f"{type(self).__name__} does not implement update_metric()")

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write"):
        raise NotImplementedError(f"{type(self).__name__} does not implement bind()")

    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False):
        raise NotImplementedError(f"{type(self).__name__} does not implement init_optimizer()")
