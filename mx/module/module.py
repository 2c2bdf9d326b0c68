"""Module: a symbol bound to one or more devices, with parameters and an
optimizer (MXNet 1.9.1's ``mxnet.module.Module``)."""
import logging
import warnings

from mx_engine import Context, cpu
from mx_io.io import DataDesc
from mx_ndarray import zeros

from mx import initializer as init
from mx import model as _model
from mx import optimizer as opt
from mx.module._kvstore_glue import (create_kvstore, initialize_kvstore, update_params,
                                     update_params_on_kvstore)
from mx.module.base_module import BaseModule, _check_input_names, _parse_data_desc
from mx.module.executor_group import DataParallelExecutorGroup

__all__ = ["Module"]


class Module(BaseModule):
    """A symbol with data, label, state and parameter inputs, bound to
    ``context`` (a Context or a list for data parallelism, the batch split
    by ``work_load_list``).

    Parameters
    ----------
    symbol : Symbol
    data_names, label_names : list of str
        The inputs fed from each batch's data and label.
    logger : Logger
    context : Context or list of Context
    work_load_list : list of number, optional
        Each device's share of the batch (equal by default).
    fixed_param_names : list of str, optional
        Parameters that are not trained (grad_req 'null').
    state_names : list of str, optional
        Inputs set with ``set_states`` rather than from batches.
    group2ctxs : dict or list of dict, optional
        ctx_group -> context(s), for model parallelism inside each device.
    compression_params : dict, optional
        Gradient compression for the kvstore.
    """

    def __init__(self, symbol, data_names=("data",), label_names=("softmax_label",),
                 logger=logging, context=cpu(), work_load_list=None, fixed_param_names=None,
                 state_names=None, group2ctxs=None, compression_params=None):
        super().__init__(logger=logger)
        contexts = [context] if isinstance(context, Context) else list(context)
        if not contexts or not all(isinstance(c, Context) for c in contexts):
            raise TypeError(f"Module: context must be a Context or a non-empty list of "
                            f"Contexts, got {context!r}")
        self._context = contexts
        if work_load_list is None:
            work_load_list = [1] * len(contexts)
        if len(work_load_list) != len(contexts):
            raise ValueError(f"Module: work_load_list has {len(work_load_list)} entries for "
                             f"{len(contexts)} contexts")
        self._work_load_list = list(work_load_list)
        self._group2ctxs = group2ctxs
        self._symbol = symbol
        self._data_names = list(data_names or [])
        self._label_names = list(label_names or [])
        self._state_names = list(state_names or [])
        self._fixed_param_names = list(fixed_param_names or [])
        _check_input_names(symbol, self._data_names, "data", True)
        _check_input_names(symbol, self._label_names, "label", False)
        _check_input_names(symbol, self._state_names, "state", True)
        _check_input_names(symbol, self._fixed_param_names, "fixed_param", True)
        inputs = self._data_names + self._label_names + self._state_names
        self._param_names = [n for n in symbol.list_arguments() if n not in inputs]
        self._aux_names = symbol.list_auxiliary_states()
        self._output_names = symbol.list_outputs()
        self._arg_params = None
        self._aux_params = None
        self._params_dirty = False
        self._compression_params = compression_params
        self._optimizer = None
        self._kvstore = None
        self._update_on_kvstore = None
        self._updater = None
        self._preload_opt_states = None
        self._grad_req = None
        self._exec_group = None
        self._data_shapes = None
        self._label_shapes = None

    # -- checkpoints -----------------------------------------------------
    @staticmethod
    def load(prefix, epoch, load_optimizer_states=False, **kwargs):
        """A Module from the checkpoint ``prefix-symbol.json`` +
        ``prefix-%04d.params`` (and ``.states`` once ``init_optimizer``
        runs, with ``load_optimizer_states``); ``kwargs`` go to Module."""
        sym, args, auxs = _model.load_checkpoint(prefix, epoch)
        mod = Module(symbol=sym, **kwargs)
        mod._arg_params = args
        mod._aux_params = auxs
        mod.params_initialized = True
        if load_optimizer_states:
            mod._preload_opt_states = f"{prefix}-{epoch:04d}.states"
        return mod

    def save_checkpoint(self, prefix, epoch, save_optimizer_states=False,
                        remove_amp_cast=True):
        """Writes ``prefix-symbol.json``, ``prefix-%04d.params`` and, with
        ``save_optimizer_states``, ``prefix-%04d.states``."""
        self._symbol.save(f"{prefix}-symbol.json")
        param_name = f"{prefix}-{epoch:04d}.params"
        self.save_params(param_name)
        logging.info('Saved checkpoint to "%s"', param_name)
        if save_optimizer_states:
            state_name = f"{prefix}-{epoch:04d}.states"
            self.save_optimizer_states(state_name)
            logging.info('Saved optimizer state to "%s"', state_name)

    # -- names and shapes ------------------------------------------------
    @property
    def data_names(self):
        return self._data_names

    @property
    def label_names(self):
        return self._label_names

    @property
    def output_names(self):
        return self._output_names

    @property
    def data_shapes(self):
        self._check_bound("data_shapes")
        return self._data_shapes

    @property
    def label_shapes(self):
        self._check_bound("label_shapes")
        return self._label_shapes

    @property
    def output_shapes(self):
        self._check_bound("output_shapes")
        return self._exec_group.get_output_shapes()

    def _check_bound(self, what):
        if not self.binded:
            raise RuntimeError(f"Module.{what}: call bind first")

    # -- parameters ------------------------------------------------------
    def get_params(self):
        """(arg_params, aux_params) on the CPU, averaged over devices."""
        if not self.params_initialized:
            raise RuntimeError("get_params: call init_params first")
        if self._params_dirty:
            self._sync_params_from_devices()
        return self._arg_params, self._aux_params

    def init_params(self, initializer=init.Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        """Fills each parameter from ``arg_params``/``aux_params`` or, where
        missing (``allow_missing``), with ``initializer``; names in sorted
        order, as MXNet draws them."""
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. "
                          "init_params call ignored.", stacklevel=2)
            return
        self._check_bound("init_params")

        def fill(desc, arr, given):
            if given is not None:
                if desc in given:
                    src = given[desc]
                    if src is not arr:
                        if src.shape != arr.shape:
                            raise ValueError(f"init_params: '{desc}' has shape {src.shape}, "
                                             f"the module's parameter {arr.shape}")
                        src.copyto(arr)
                    return
                if not allow_missing:
                    raise RuntimeError(f"init_params: {desc} is not presented")
                if initializer is None:
                    return
            elif initializer is None:
                raise RuntimeError(f"init_params: no value and no initializer for {desc}")
            initializer(desc, arr)

        attrs = self._symbol.attr_dict()
        for params, given in ((self._arg_params, arg_params), (self._aux_params, aux_params)):
            for name in sorted(params):
                fill(init.InitDesc(name, attrs.get(name)), params[name], given)
        self.params_initialized = True
        self._params_dirty = False
        self._exec_group.set_params(self._arg_params, self._aux_params,
                                    allow_extra=allow_extra)

    def _copy_params(self, arg_params, aux_params, force_init, allow_extra):
        """set_params with allow_missing: the given parameters straight to the devices."""
        self._exec_group.set_params(arg_params, aux_params, allow_extra=allow_extra)

    def _sync_params_from_devices(self):
        self._exec_group.get_params(self._arg_params, self._aux_params)
        if self._kvstore and self._update_on_kvstore:
            from mx import ndarray as nd
            for name, value in sorted(self._arg_params.items()):
                if value.stype == "row_sparse":
                    row_ids = nd.arange(0, value.shape[0], dtype="int64")
                    self._kvstore.row_sparse_pull(name, value, row_ids=row_ids)
        self._params_dirty = False

    # -- binding ---------------------------------------------------------
    def _reset_bind(self):
        self.binded = False
        self._exec_group = None
        self._data_shapes = None
        self._label_shapes = None

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write"):
        """Allocates the executors for these input shapes.

        ``grad_req`` is 'write', 'add' or 'null', a list (one per argument)
        or a dict (argument name -> req); ``shared_module`` lends its
        parameters and memory to this module (bucketing).
        """
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if inputs_need_grad and not for_training:
            raise ValueError("Module.bind: inputs_need_grad=True needs for_training=True")
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._grad_req = grad_req
        self._data_shapes, self._label_shapes = _parse_data_desc(
            self.data_names, self.label_names, data_shapes, label_shapes)
        shared_group = None
        if shared_module is not None:
            if not (isinstance(shared_module, Module) and shared_module.binded and
                    shared_module.params_initialized):
                raise ValueError("Module.bind: shared_module must be a Module that is bound "
                                 "and has its parameters initialized")
            shared_group = shared_module._exec_group
            if len(shared_group.execs) < len(self._context):
                raise ValueError("Module.bind: shared_module runs on fewer devices than "
                                 "this module")
        self._exec_group = DataParallelExecutorGroup(
            self._symbol, self._context, self._work_load_list, self._data_shapes,
            self._label_shapes, self._param_names, for_training, inputs_need_grad,
            shared_group, logger=self.logger, fixed_param_names=self._fixed_param_names,
            grad_req=grad_req, group2ctxs=self._group2ctxs, state_names=self._state_names)
        self.binded = True
        if shared_module is not None:
            self.params_initialized = True
            self._arg_params = shared_module._arg_params
            self._aux_params = shared_module._aux_params
        elif self.params_initialized:
            # Re-binding (or loaded with Module.load): the devices get the values we hold.
            self._exec_group.set_params(self._arg_params, self._aux_params)
        else:
            self._arg_params = {name: zeros(block[0].shape, dtype=block[0].dtype)
                                for name, block in zip(self._param_names,
                                                       self._exec_group.param_arrays)}
            self._aux_params = {name: zeros(block[0].shape, dtype=block[0].dtype)
                                for name, block in zip(self._aux_names,
                                                       self._exec_group.aux_arrays)}
        if shared_module is not None and shared_module.optimizer_initialized:
            self.borrow_optimizer(shared_module)

    def reshape(self, data_shapes, label_shapes=None):
        """Re-binds for new input shapes (e.g. another batch size), keeping
        the parameters."""
        self._check_bound("reshape")
        self._data_shapes, self._label_shapes = _parse_data_desc(
            self.data_names, self.label_names, data_shapes, label_shapes)
        self._exec_group.reshape(self._data_shapes, self._label_shapes)

    # -- optimizer -------------------------------------------------------
    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False):
        """Creates the optimizer (``rescale_grad`` = 1 / batch size unless
        given) and the kvstore; one device with 'local' updates on the
        worker without a store, as MXNet does."""
        self._check_ready("init_optimizer")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring...")
            return
        if self._params_dirty:
            self._sync_params_from_devices()
        kvstore, update_on_kvstore = create_kvstore(kvstore, len(self._context),
                                                    self._arg_params)
        batch_size = self._exec_group.batch_size
        if kvstore and "dist" in kvstore.type and "_sync" in kvstore.type:
            batch_size *= kvstore.num_workers
        rescale_grad = 1.0 / batch_size
        num_dev = len(self._context)
        names = self._exec_group.param_names
        if update_on_kvstore:
            idx2name = dict(enumerate(names))
        else:
            idx2name = {i * num_dev + k: n for k in range(num_dev) for i, n in enumerate(names)}
        if isinstance(optimizer, str):
            optimizer_params = dict(optimizer_params)
            optimizer_params.setdefault("rescale_grad", rescale_grad)
            optimizer = opt.create(optimizer, sym=self.symbol, param_idx2name=idx2name,
                                   **optimizer_params)
        else:
            if not isinstance(optimizer, opt.Optimizer):
                raise TypeError(f"init_optimizer: optimizer must be a name or an Optimizer, "
                                f"got {type(optimizer).__name__}")
            if optimizer.rescale_grad != rescale_grad:
                warnings.warn(f"Optimizer created manually outside Module but rescale_grad is "
                              f"not normalized to 1.0/batch_size/num_workers "
                              f"({optimizer.rescale_grad} vs. {rescale_grad}). Is this "
                              f"intended?", stacklevel=2)
            if not optimizer.idx2name:
                optimizer.idx2name = idx2name.copy()
        self._optimizer = optimizer
        self._kvstore = kvstore
        self._update_on_kvstore = update_on_kvstore
        self._updater = None
        if kvstore:
            if self._compression_params:
                kvstore.set_gradient_compression(self._compression_params)
            if update_on_kvstore:
                kvstore.set_optimizer(self._optimizer)
            initialize_kvstore(kvstore, self._exec_group.param_arrays, self._arg_params,
                               self._param_names, update_on_kvstore)
        if not update_on_kvstore:
            self._updater = opt.get_updater(optimizer)
        self.optimizer_initialized = True
        if self._preload_opt_states is not None:
            self.load_optimizer_states(self._preload_opt_states)
            self._preload_opt_states = None

    def borrow_optimizer(self, shared_module):
        """Uses ``shared_module``'s optimizer, kvstore and updater."""
        if not shared_module.optimizer_initialized:
            raise RuntimeError("borrow_optimizer: the shared module has no optimizer yet")
        self._optimizer = shared_module._optimizer
        self._kvstore = shared_module._kvstore
        self._update_on_kvstore = shared_module._update_on_kvstore
        self._updater = shared_module._updater
        self.optimizer_initialized = True

    def save_optimizer_states(self, fname):
        """Writes the optimizer's states (the kvstore's when it updates)."""
        if not self.optimizer_initialized:
            raise RuntimeError("save_optimizer_states: call init_optimizer first")
        if self._update_on_kvstore:
            self._kvstore.save_optimizer_states(fname)
        else:
            with open(fname, "wb") as fout:
                fout.write(self._updater.get_states())

    def load_optimizer_states(self, fname):
        """Reads states written by ``save_optimizer_states`` (ours or MXNet's)."""
        if not self.optimizer_initialized:
            raise RuntimeError("load_optimizer_states: call init_optimizer first")
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
        else:
            with open(fname, "rb") as fin:
                self._updater.set_states(fin.read())

    # -- computation -----------------------------------------------------
    def forward(self, data_batch, is_train=None):
        """Pushes the forward pass; a batch of another shape re-binds first."""
        self._check_ready("forward")
        current = tuple(d.shape for d in self._data_shapes)
        if isinstance(data_batch, list):
            first = data_batch[0].data
            new = tuple((len(data_batch) * a.shape[0],) + tuple(a.shape[1:]) for a in first)
        else:
            if data_batch.data is None or len(data_batch.data) != len(self._data_shapes):
                got = 0 if data_batch.data is None else len(data_batch.data)
                raise ValueError(f"Module.forward: the batch has {got} data arrays, the "
                                 f"module's data names are {self.data_names}")
            new = tuple(a.shape for a in data_batch.data)
        if current != new:
            self._reshape_for(data_batch, new)
        self._exec_group.forward(data_batch, is_train)

    def _reshape_for(self, data_batch, new_shapes):
        provide_data = getattr(data_batch, "provide_data", None)
        if provide_data:
            data_shapes = provide_data
        else:
            data_shapes = [DataDesc(d.name, shape, d.dtype, d.layout)
                           for d, shape in zip(self._data_shapes, new_shapes)]
        provide_label = getattr(data_batch, "provide_label", None)
        label = getattr(data_batch, "label", None)
        if provide_label:
            label_shapes = provide_label
        elif label and self._label_shapes:
            label_shapes = [DataDesc(d.name, a.shape, d.dtype, d.layout)
                            for d, a in zip(self._label_shapes, label)]
        else:
            label_shapes = None
        self.reshape(data_shapes, label_shapes)

    def backward(self, out_grads=None):
        """Pushes the backward pass (``out_grads`` for non-loss outputs)."""
        self._check_ready("backward")
        self._exec_group.backward(out_grads=out_grads)

    def update(self):
        """Pushes the parameter update from the gradients just computed."""
        if not self.optimizer_initialized:
            raise RuntimeError("Module.update: call init_optimizer first")
        self._params_dirty = True
        group = self._exec_group
        if self._update_on_kvstore:
            update_params_on_kvstore(group.param_arrays, group.grad_arrays, self._kvstore,
                                     group.param_names)
        else:
            update_params(group.param_arrays, group.grad_arrays, updater=self._updater,
                          num_device=len(self._context), kvstore=self._kvstore,
                          param_names=group.param_names)

    def get_outputs(self, merge_multi_context=True):
        self._check_ready("get_outputs")
        return self._exec_group.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        self._check_ready("get_input_grads")
        if not self.inputs_need_grad:
            raise RuntimeError("get_input_grads: bind with inputs_need_grad=True first")
        return self._exec_group.get_input_grads(merge_multi_context=merge_multi_context)

    def get_states(self, merge_multi_context=True):
        self._check_ready("get_states")
        return self._exec_group.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states=None, value=None):
        self._check_ready("set_states")
        self._exec_group.set_states(states, value)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Feeds the last outputs and ``labels`` to ``eval_metric``."""
        self._exec_group.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon):
        self._check_bound("install_monitor")
        self._exec_group.install_monitor(mon)

    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Pulls the rows of row_sparse parameters that the next batch needs
        (``sparse_row_id_fn(batch)`` -> {name: row ids}) from the kvstore."""
        if sparse_row_id_fn is None:
            return
        if not self._kvstore or not self._update_on_kvstore:
            warnings.warn("Parameters are not updated in the KVStore. No need to call "
                          "sparse_row_id_fn.", stacklevel=2)
            return
        row_ids = sparse_row_id_fn(data_batch)
        if not isinstance(row_ids, dict):
            raise TypeError("prepare: sparse_row_id_fn must return a dict of name -> row ids")
        for name, row_id in row_ids.items():
            index = self._exec_group.param_names.index(name)
            self._kvstore.row_sparse_pull(name, self._exec_group.param_arrays[index],
                                          row_ids=row_id, priority=-index)
