"""EvalMetric, its registry and its device-side running sums.

MXNet 1.9.1's metrics call ``asnumpy()`` in every ``update``, so a training
loop waits for each batch's outputs before queueing the next batch.  Here
``update`` queues NDArray operations that compute the batch's statistic on
the device and keeps the result unread; ``get()`` (or reading
``sum_metric``/``num_inst``) sums the queued results and waits for them.
So the engine runs ahead of Python and only logging waits.
"""
import numpy

from mx import _registry
from mx import ndarray
from mx.ndarray import NDArray

# Queued batch statistics are folded into one device array this often, so
# the list stays short and each fold is one add_n.
_FOLD_EVERY = 32


class _RunningSum:
    """A sum of host numbers and unread device arrays (all of one shape)."""
    __slots__ = ("host", "queued", "device")

    def __init__(self, value=0):
        self.host = value
        self.queued = []            # NDArrays not yet folded
        self.device = {}            # (context, dtype) -> folded NDArray

    def add(self, value):
        if isinstance(value, NDArray):
            self.queued.append(value)
            if len(self.queued) >= _FOLD_EVERY:
                self._fold()
        else:
            self.host = self.host + value

    def _fold(self):
        groups = {}
        for arr in self.queued:
            groups.setdefault((arr.context, numpy.dtype(arr.dtype)), []).append(arr)
        self.queued = []
        for key, arrs in groups.items():
            total = arrs[0] if len(arrs) == 1 else ndarray.add_n(*arrs)
            prev = self.device.get(key)
            self.device[key] = total if prev is None else prev + total

    def value(self):
        """The sum now: waits for the device parts."""
        self._fold()
        total = self.host
        for arr in self.device.values():
            part = arr.asnumpy().astype(numpy.float64)
            total = total + (part.reshape(()) if part.size == 1 and arr.ndim <= 1 else part)
        if isinstance(total, numpy.ndarray) and total.ndim == 0:
            return float(total)
        return total


class _Stat:
    """A running-sum attribute: reads give the number (waiting for the
    device), assignment replaces it, ``metric._add(name, x)`` queues ``x``."""
    def __set_name__(self, owner, name):
        self.key = "_sum_" + name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        return _running(obj, self.key).value()

    def __set__(self, obj, value):
        obj.__dict__[self.key] = _RunningSum(value)


def _running(obj, key):
    acc = obj.__dict__.get(key)
    if acc is None:
        acc = obj.__dict__[key] = _RunningSum()
    return acc


def check_label_shapes(labels, preds, wrap=False, shape=False):
    """Raises ValueError unless ``labels`` and ``preds`` have the same
    length (or shape, with ``shape=True``); with ``wrap`` a single NDArray
    becomes a one-element list.  Returns ``(labels, preds)``."""
    if not shape:
        label_shape, pred_shape = len(labels), len(preds)
    else:
        label_shape, pred_shape = labels.shape, preds.shape
    if label_shape != pred_shape:
        raise ValueError(f"Shape of labels {label_shape} does not match shape of "
                         f"predictions {pred_shape}")
    if wrap:
        if isinstance(labels, NDArray):
            labels = [labels]
        if isinstance(preds, NDArray):
            preds = [preds]
    return labels, preds


def as_nd(x, like=None):
    """``x`` as an NDArray (NumPy input is copied in), on ``like``'s device."""
    if not isinstance(x, NDArray):
        x = ndarray.array(numpy.asarray(x), ctx=None if like is None else like.context)
    elif like is not None and x.context != like.context:
        x = x.as_in_context(like.context)
    return x


class EvalMetric:
    """The base class of evaluation metrics.

    Parameters
    ----------
    name : str
        Name of this metric instance for display.
    output_names, label_names : list of str, or None
        Which predictions and labels ``update_dict`` passes on (all by default).

    Notes
    -----
    ``sum_metric``, ``num_inst``, ``global_sum_metric`` and
    ``global_num_inst`` read as numbers, as in MXNet.  The built-in metrics
    queue their per-batch statistics on the device in ``update`` and those
    reads (and ``get``) wait for them.  A subclass may assign them
    (``self.sum_metric += x``) as MXNet subclasses do; the read in ``+=``
    then waits.  Subclasses that want to stay asynchronous call
    ``self._add(sum_metric, num_inst)`` with NDArrays or numbers.
    """
    sum_metric = _Stat()
    num_inst = _Stat()
    global_sum_metric = _Stat()
    global_num_inst = _Stat()

    def __init__(self, name, output_names=None, label_names=None, **kwargs):
        self.name = str(name)
        self.output_names = output_names
        self.label_names = label_names
        self._has_global_stats = kwargs.pop("has_global_stats", False)
        self._kwargs = kwargs
        self.reset()

    def __str__(self):
        return f"EvalMetric: {dict(self.get_name_value())}"

    def _add(self, sum_metric, num_inst):
        """Adds one batch's statistic to the local and global sums without waiting."""
        for key, value in (("sum_metric", sum_metric), ("num_inst", num_inst)):
            _running(self, "_sum_" + key).add(value)
            _running(self, "_sum_global_" + key).add(value)

    def get_config(self):
        """The configuration ``mx.metric.create(**config)`` rebuilds this metric from."""
        config = self._kwargs.copy()
        config.update({"metric": self.__class__.__name__, "name": self.name,
                       "output_names": self.output_names, "label_names": self.label_names})
        return config

    def update_dict(self, label, pred):
        """Updates with the labels and predictions named in ``label_names``
        and ``output_names`` (dicts of name -> NDArray)."""
        pred = ([pred[name] for name in self.output_names] if self.output_names is not None
                else list(pred.values()))
        label = ([label[name] for name in self.label_names] if self.label_names is not None
                 else list(label.values()))
        self.update(label, pred)

    def update(self, labels, preds):
        """Adds a batch: ``labels`` and ``preds`` are lists of NDArrays."""
        raise NotImplementedError(f"{type(self).__name__} must override update(labels, preds)")

    def reset(self):
        """Resets the local and global statistics."""
        self.num_inst = 0
        self.sum_metric = 0.0
        self.global_num_inst = 0
        self.global_sum_metric = 0.0

    def reset_local(self):
        """Resets the local statistics; the global ones keep counting."""
        self.num_inst = 0
        self.sum_metric = 0.0

    def get(self):
        """``(name, value)`` of the local statistics (waits for the device)."""
        num = self.num_inst
        if num == 0:
            return self.name, float("nan")
        return self.name, self.sum_metric / num

    def get_global(self):
        """``(name, value)`` since the last ``reset()``."""
        if not self._has_global_stats:
            return self.get()
        num = self.global_num_inst
        if num == 0:
            return self.name, float("nan")
        return self.name, self.global_sum_metric / num

    def get_name_value(self):
        """``[(name, value), ...]`` of ``get()``."""
        return _zip_name_value(*self.get())

    def get_global_name_value(self):
        """``[(name, value), ...]`` of ``get_global()``."""
        if not self._has_global_stats:
            return self.get_name_value()
        return _zip_name_value(*self.get_global())


def _zip_name_value(name, value):
    if not isinstance(name, list):
        name = [name]
    if not isinstance(value, list):
        value = [value]
    return list(zip(name, value))


register = _registry.get_register_func(EvalMetric, "metric")
alias = _registry.get_alias_func(EvalMetric, "metric")
create_registered = _registry.get_create_func(EvalMetric, "metric")
