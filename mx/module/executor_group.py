"""DataParallelExecutorGroup: one executor per device, each fed a slice of
the batch (MXNet 1.9.1's ``mxnet.module.executor_group``)."""
import logging
from collections import OrderedDict

from mx_engine import MXNetError, cpu
from mx_io.io import DataDesc
from mx_graph.executor import Executor
from mx_ndarray import NDArray, concatenate

from mx import ndarray as nd

__all__ = ["DataParallelExecutorGroup"]


def split_input_slice(batch_size, work_load_list):
    """The batch's slices, one per device, sized by ``work_load_list``
    (rounded; the last takes the remainder). Raises when a device gets none."""
    total = float(sum(work_load_list))
    sizes = [int(round(w * batch_size / total)) for w in work_load_list]
    slices, start = [], 0
    for i, size in enumerate(sizes):
        end = batch_size if i == len(sizes) - 1 else min(start + size, batch_size)
        if start >= end:
            raise ValueError(f"Module: batch size {batch_size} is too small to split over "
                             f"{len(work_load_list)} devices with work_load_list "
                             f"{list(work_load_list)}: device {i} would get no examples")
        slices.append(slice(start, end))
        start = end
    return slices


def _as_descs(shapes, what):
    """DataDescs from DataDescs or ``(name, shape)`` pairs."""
    if shapes is None:
        return []
    out = []
    for item in shapes:
        if isinstance(item, DataDesc):
            out.append(item)
        else:
            try:
                name, shape = item
            except (TypeError, ValueError):
                raise TypeError(f"Module: {what} must be DataDescs or (name, shape) pairs, "
                                f"got {item!r}") from None
            out.append(DataDesc(name, tuple(shape)))
    return out


def _merge_multi_context(outputs, major_axis):
    """Joins each output's per-device parts along its batch axis (a part
    alone is returned as is)."""
    merged = []
    for parts, axis in zip(outputs, major_axis):
        if axis >= 0 and len(parts) > 1:
            parts = [p.as_in_context(parts[0].context) for p in parts]
            if axis == 0:
                merged.append(concatenate(parts, axis=0, always_copy=False))
            else:
                merged.append(nd.concat(*parts, dim=axis))
        else:
            merged.append(parts[0])
    return merged


def _load_into(sources, targets, slices, axes):
    """Copies each source (or its device slices) into the executors' arrays."""
    for src, dst_list, axis in zip(sources, targets, axes):
        if not isinstance(src, NDArray):
            src = nd.array(src)
        if len(dst_list) == 1:
            dst = dst_list[0]
            if src.shape != dst.shape:
                raise ValueError(f"Module: an input has shape {src.shape}, the module was "
                                 f"bound with {dst.shape}")
            src.copyto(dst)
            continue
        for dst, islice in zip(dst_list, slices):
            if axis == 0:
                part = src[islice]
            elif axis > 0:
                part = nd.slice_axis(src, axis=axis, begin=islice.start, end=islice.stop)
            else:
                part = src
            part.copyto(dst)


class DataParallelExecutorGroup:
    """Executors of one symbol on several devices, sharing parameters by
    name. The batch is split along each input's batch axis by
    ``workload``; outputs are merged back; gradients stay per device
    (summed by the kvstore or the updater's caller).

    Parameters follow MXNet 1.9.1: ``symbol, contexts, workload,
    data_shapes, label_shapes, param_names, for_training, inputs_need_grad,
    shared_group, logger, fixed_param_names, grad_req, state_names,
    group2ctxs``.
    """

    def __init__(self, symbol, contexts, workload, data_shapes, label_shapes, param_names,
                 for_training, inputs_need_grad, shared_group=None, logger=logging,
                 fixed_param_names=None, grad_req="write", state_names=None, group2ctxs=None):
        self.param_names = list(param_names)
        self.arg_names = symbol.list_arguments()
        self.aux_names = symbol.list_auxiliary_states()
        self.symbol = symbol
        self.contexts = list(contexts)
        self.workload = list(workload)
        self.group2ctxs = _group2ctxs(group2ctxs, len(self.contexts))
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self.logger = logger
        self.fixed_param_names = list(fixed_param_names or ())
        self.state_names = list(state_names or ())
        self.execs = []
        self._default_execs = None
        self.data_shapes = self.label_shapes = None
        self.data_layouts = self.label_layouts = None
        self.output_layouts = [DataDesc.get_batch_axis(s.attr("__layout__"))
                               for s in symbol]
        self.output_names = symbol.list_outputs()     # read by every update_metric
        self.num_outputs = len(self.output_names)
        self.shared_data_arrays = ([{} for _ in self.contexts] if shared_group is None
                                   else shared_group.shared_data_arrays)
        self.grad_req = self._grad_reqs(grad_req, data_shapes, label_shapes)
        self.bind_exec(data_shapes, label_shapes, shared_group)

    def _grad_reqs(self, grad_req, data_shapes, label_shapes):
        data_names = [d.name for d in _as_descs(data_shapes, "data_shapes")]
        _as_descs(label_shapes, "label_shapes")  # only checked: labels never get gradients
        if isinstance(grad_req, str):
            reqs = {}
            for name in self.arg_names:
                if name in self.param_names:
                    reqs[name] = ("null" if name in self.fixed_param_names or
                                  not self.for_training else grad_req)
                elif name in data_names:
                    reqs[name] = grad_req if self.inputs_need_grad else "null"
                else:
                    reqs[name] = "null"
            return reqs
        if isinstance(grad_req, (list, tuple)):
            if len(grad_req) != len(self.arg_names):
                raise ValueError(f"Module.bind: grad_req has {len(grad_req)} entries, the "
                                 f"symbol {len(self.arg_names)} arguments {self.arg_names}")
            return dict(zip(self.arg_names, grad_req))
        if isinstance(grad_req, dict):
            reqs = {name: ("write" if name in self.param_names and self.for_training
                           else "null") for name in self.arg_names}
            unknown = set(grad_req) - set(self.arg_names)
            if unknown:
                raise ValueError(f"Module.bind: grad_req names {sorted(unknown)}, which are "
                                 f"not arguments of the symbol {self.arg_names}")
            reqs.update(grad_req)
            return reqs
        raise TypeError(f"Module.bind: grad_req must be a str, list or dict, got "
                        f"{type(grad_req).__name__}")

    # -- binding ---------------------------------------------------------
    def decide_slices(self, data_shapes):
        """The batch size and each device's slice; every input must agree
        on the batch size along its layout's batch axis."""
        axes = [DataDesc.get_batch_axis(d.layout) for d in data_shapes]
        for desc, axis in zip(data_shapes, axes):
            if axis == -1:
                continue
            size = desc.shape[axis]
            if self.batch_size is None:
                self.batch_size = size
                self.slices = split_input_slice(size, self.workload)
            elif size != self.batch_size:
                raise ValueError(f"Module: all data must have the same batch size: "
                                 f"batch_size = {self.batch_size}, but {desc.name} has shape "
                                 f"{desc.shape}")
        return axes

    def _sliced_shape(self, shapes, k, axes):
        out = []
        for desc, axis in zip(shapes, axes):
            shape = list(desc.shape)
            if axis >= 0:
                shape[axis] = self.slices[k].stop - self.slices[k].start
            out.append(DataDesc(desc.name, tuple(shape), desc.dtype, desc.layout))
        return out

    def bind_exec(self, data_shapes, label_shapes, shared_group=None, reshape=False):
        """Binds (or, with ``reshape``, re-binds sharing memory) one executor
        per device for these input shapes."""
        data_shapes = _as_descs(data_shapes, "data_shapes")
        label_shapes = _as_descs(label_shapes, "label_shapes")
        self.batch_size = None
        self.data_layouts = self.decide_slices(data_shapes)
        self.label_layouts = self.decide_slices(label_shapes) if label_shapes else None
        old_execs = self.execs
        self.execs = []
        for k in range(len(self.contexts)):
            shapes = self._sliced_shape(data_shapes, k, self.data_layouts)
            if label_shapes:
                shapes += self._sliced_shape(label_shapes, k, self.label_layouts)
            if reshape:
                inputs = self._reshape_inputs(shapes)
                try:
                    self.execs.append(old_execs[k].reshape(allow_up_sizing=True, **inputs))
                except MXNetError as err:
                    raise MXNetError(f"Module: cannot re-bind for the input shapes {inputs} "
                                     f"(a batch of another shape): {err}") from err
            else:
                shared = shared_group.execs[k] if shared_group is not None else None
                self.execs.append(self._bind_ith(k, shapes, shared))
        self.data_shapes, self.label_shapes = data_shapes, label_shapes
        self.data_names = [d.name for d in data_shapes]
        self.label_names = [d.name for d in label_shapes]
        self._collect_arrays()

    def _reshape_inputs(self, shapes):
        """The new input shapes, with the labels' inferred when a batch
        came without them (MXNet refuses that); a parameter whose shape
        would change stays an error."""
        given = {d.name: d.shape for d in shapes if d.name in self.arg_names}
        arg_shapes = self.symbol.infer_shape_partial(**given)[0]
        for name, shape in zip(self.arg_names, arg_shapes or ()):
            if name not in given and name not in self.param_names and shape and all(shape):
                given[name] = tuple(shape)
        return given

    def reshape(self, data_shapes, label_shapes):
        """Re-binds for new input shapes, keeping the parameters' memory."""
        data_shapes = _as_descs(data_shapes, "data_shapes")
        label_shapes = _as_descs(label_shapes, "label_shapes")
        if data_shapes == self.data_shapes and label_shapes == self.label_shapes:
            return
        if self._default_execs is None:
            self._default_execs = list(self.execs)
        self.execs = self._default_execs
        self.bind_exec(data_shapes, label_shapes, reshape=True)

    def _bind_ith(self, k, shapes, shared_exec):
        ctx = self.contexts[k]
        # A label the symbol does not read (a module scored without its loss) is skipped.
        shapes = [d for d in shapes if d.name in self.arg_names]
        shape_dict = {d.name: d.shape for d in shapes}
        type_dict = {d.name: d.dtype for d in shapes}
        for name in self.arg_names:
            if name not in shape_dict and name not in self.param_names and \
                    name not in self.state_names:
                raise ValueError(f"Module.bind: the symbol's input '{name}' is neither data, "
                                 f"label, state nor parameter; data names "
                                 f"{[d.name for d in shapes]}")
        return Executor.simple_bind(
            self.symbol, ctx, grad_req=self.grad_req, type_dict=type_dict,
            group2ctx=self.group2ctxs[k],
            shared_arg_names=self.param_names, shared_exec=shared_exec,
            shared_buffer=self.shared_data_arrays[k], shapes=shape_dict)

    def _collect_arrays(self):
        execs = self.execs
        self.data_arrays = [[e.arg_dict[name] for e in execs] for name in self.data_names]
        self.label_arrays = [[e.arg_dict[name] for e in execs] for name in self.label_names
                             if name in self.arg_names]
        self.state_arrays = [[e.arg_dict[name] for e in execs] for name in self.state_names]
        self.param_arrays = [[e.arg_arrays[i] for e in execs]
                             for i, name in enumerate(self.arg_names) if name in self.param_names]
        if self.for_training:
            self.grad_arrays = [[e.grad_arrays[i] for e in execs]
                                for i, name in enumerate(self.arg_names)
                                if name in self.param_names]
        else:
            self.grad_arrays = None
        data_idx = [self.arg_names.index(name) for name in self.data_names]
        if self.inputs_need_grad:
            self.input_grad_arrays = [[e.grad_arrays[i] for e in execs] for i in data_idx]
        else:
            self.input_grad_arrays = None
        self.aux_arrays = [[e.aux_arrays[i] for e in execs] for i in range(len(self.aux_names))]

    # -- parameters ------------------------------------------------------
    def set_params(self, arg_params, aux_params, allow_extra=False):
        """Copies the parameters into every device's executor."""
        for e in self.execs:
            e.copy_params_from(arg_params, aux_params, allow_extra_params=allow_extra)

    def get_params(self, arg_params, aux_params):
        """Averages each parameter over the devices into the given dicts."""
        for names, blocks, out in ((self.param_names, self.param_arrays, arg_params),
                                   (self.aux_names, self.aux_arrays, aux_params)):
            for name, block in zip(names, blocks):
                if len(block) == 1:
                    value = block[0]
                else:
                    value = block[0].copyto(cpu())
                    for w in block[1:]:
                        value += w.copyto(cpu())
                    value /= len(block)
                if value.dtype != out[name].dtype:
                    value = value.astype(out[name].dtype)
                value.copyto(out[name])

    # -- running ---------------------------------------------------------
    def forward(self, data_batch, is_train=None):
        """Loads the batch into the executors (split by device) and pushes
        each device's forward pass."""
        if is_train is None:
            is_train = self.for_training
        if isinstance(data_batch, list):       # already split, one batch per device
            for k, batch in enumerate(data_batch):
                for src, dst in zip(batch.data, self.data_arrays):
                    src.copyto(dst[k])
                if batch.label:
                    for src, dst in zip(batch.label, self.label_arrays):
                        src.copyto(dst[k])
        else:
            _load_into(data_batch.data, self.data_arrays, self.slices, self.data_layouts)
            if self.label_arrays and data_batch.label:
                _load_into(data_batch.label, self.label_arrays, self.slices,
                           self.label_layouts)
        for e in self.execs:
            e.forward(is_train=is_train)

    def get_output_shapes(self):
        """(name, shape) of each output for the whole batch."""
        shapes = []
        for name, out, axis in zip(self.output_names, self.execs[0].outputs,
                                   self.output_layouts):
            shape = list(out.shape)
            if axis >= 0:
                shape[axis] = self.batch_size
            shapes.append((name, tuple(shape)))
        return shapes

    def get_outputs(self, merge_multi_context=True, begin=0, end=None):
        """Each output, merged over devices or as per-device lists."""
        end = self.num_outputs if end is None else end
        outputs = [[e.outputs[i] for e in self.execs] for i in range(begin, end)]
        if merge_multi_context:
            return _merge_multi_context(outputs, self.output_layouts[begin:end])
        return outputs

    def get_states(self, merge_multi_context=True):
        if merge_multi_context:
            return _merge_multi_context(self.state_arrays, [0] * len(self.state_arrays))
        return self.state_arrays

    def set_states(self, states=None, value=None):
        """Sets the states from per-device lists, or every one to ``value``."""
        if states is not None:
            if value is not None:
                raise ValueError("set_states: give states or value, not both")
            for src_list, dst_list in zip(states, self.state_arrays):
                for src, dst in zip(src_list, dst_list):
                    src.copyto(dst)
        else:
            for dst_list in self.state_arrays:
                for dst in dst_list:
                    dst[:] = value

    def get_input_grads(self, merge_multi_context=True):
        if not self.inputs_need_grad:
            raise RuntimeError("get_input_grads: the module was bound with "
                               "inputs_need_grad=False")
        if merge_multi_context:
            return _merge_multi_context(self.input_grad_arrays, self.data_layouts)
        return self.input_grad_arrays

    def backward(self, out_grads=None):
        """Pushes each device's backward pass, with its slice of ``out_grads``."""
        if not self.for_training:
            raise RuntimeError("backward: the module was bound with for_training=False")
        for k, e in enumerate(self.execs):
            if out_grads is None:
                e.backward()
                continue
            islice = self.slices[k]
            parts = []
            for grad, axis in zip(out_grads, self.output_layouts):
                if len(self.execs) == 1 or axis < 0:
                    parts.append(grad.as_in_context(self.contexts[k]))
                elif axis == 0:
                    parts.append(grad[islice].as_in_context(self.contexts[k]))
                else:
                    parts.append(nd.slice_axis(grad, axis=axis, begin=islice.start,
                                               end=islice.stop).as_in_context(self.contexts[k]))
            e.backward(out_grads=parts)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Updates the metric with each device's outputs and its labels."""
        for k, e in enumerate(self.execs):
            if pre_sliced:
                part = labels[k]
            elif len(self.execs) == 1:
                part = labels
            else:
                islice = self.slices[k]
                part = []
                for label, axis in zip(labels, self.label_layouts or [0] * len(labels)):
                    if axis == 0:
                        part.append(label[islice])
                    elif axis > 0:
                        part.append(nd.slice_axis(label, axis=axis, begin=islice.start,
                                                  end=islice.stop))
                    else:
                        part.append(label)
            eval_metric.update_dict(OrderedDict(zip(self.label_names, part)),
                                    OrderedDict(zip(self.output_names, e.outputs)))

    def install_monitor(self, mon):
        for e in self.execs:
            mon.install(e)


def _group2ctxs(group2ctxs, num_devices):
    """One group2ctx dict per device (MXNet accepts a dict of lists or a
    list of dicts)."""
    if group2ctxs is None:
        return [None] * num_devices
    if isinstance(group2ctxs, list):
        if len(group2ctxs) != num_devices:
            raise ValueError(f"Module: group2ctxs has {len(group2ctxs)} entries for "
                             f"{num_devices} devices")
        return group2ctxs
    out = [{} for _ in range(num_devices)]
    for group, ctxs in group2ctxs.items():
        ctxs = ctxs if isinstance(ctxs, list) else [ctxs]
        if len(ctxs) != num_devices:
            raise ValueError(f"Module: group2ctxs['{group}'] has {len(ctxs)} contexts for "
                             f"{num_devices} devices")
        for k, ctx in enumerate(ctxs):
            out[k][group] = ctx
    return out

