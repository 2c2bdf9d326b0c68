"""``mx.metric``: online evaluation metrics, as in MXNet 1.9.1.

Metrics update asynchronously: ``update`` queues the batch's statistic as
NDArray operations on the predictions' device and returns without waiting;
``get()``/``get_global()`` (and reading ``sum_metric``/``num_inst``) wait.
A training loop therefore waits only where it logs.  CustomMetric and
``np`` call NumPy functions, so their ``update`` waits for each batch.
"""
from collections import OrderedDict

from mx._metric_base import (EvalMetric, alias, as_nd, check_label_shapes,
                             create_registered, register)
from mx._metric_classification import F1, MCC, PCC, Accuracy, TopKAccuracy
from mx._metric_regression import (MAE, MSE, RMSE, Caffe, CrossEntropy, Loss,
                                   NegativeLogLikelihood, PearsonCorrelation, Perplexity,
                                   Torch)

__all__ = ["EvalMetric", "CompositeEvalMetric", "Accuracy", "TopKAccuracy", "F1", "MCC",
           "Perplexity", "MAE", "MSE", "RMSE", "CrossEntropy", "NegativeLogLikelihood",
           "PearsonCorrelation", "PCC", "Loss", "Torch", "Caffe", "CustomMetric", "np",
           "create", "register", "alias", "check_label_shapes"]


def create(metric, *args, **kwargs):
    """Creates a metric from a name (``'acc'``, ``'ce'``, ...), an
    EvalMetric (returned as is), a list of those (a CompositeEvalMetric),
    or a function ``feval(label, pred)`` (a CustomMetric)."""
    if callable(metric) and not isinstance(metric, (EvalMetric, type)):
        return CustomMetric(metric, *args, **kwargs)
    if isinstance(metric, list):
        composite = CompositeEvalMetric()
        for child in metric:
            composite.add(create(child, *args, **kwargs))
        return composite
    return create_registered(metric, *args, **kwargs)


@register
@alias("composite")
class CompositeEvalMetric(EvalMetric):
    """Several metrics updated together; ``get`` returns lists of names and values."""
    def __init__(self, metrics=None, name="composite", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.metrics = [create(m) for m in (metrics or [])]

    def add(self, metric):
        """Adds a child metric (anything ``create`` takes)."""
        self.metrics.append(create(metric))

    def get_metric(self, index):
        """The child metric at ``index``."""
        try:
            return self.metrics[index]
        except IndexError:
            return ValueError(f"Metric index {index} is out of range 0 and {len(self.metrics)}")

    def update_dict(self, labels, preds):
        if self.label_names is not None:
            labels = OrderedDict([i for i in labels.items() if i[0] in self.label_names])
        if self.output_names is not None:
            preds = OrderedDict([i for i in preds.items() if i[0] in self.output_names])
        for metric in self.metrics:
            metric.update_dict(labels, preds)

    def update(self, labels, preds):
        for metric in self.metrics:
            metric.update(labels, preds)

    def reset(self):
        for metric in getattr(self, "metrics", ()):
            metric.reset()

    def reset_local(self):
        for metric in getattr(self, "metrics", ()):
            metric.reset_local()

    def _collect(self, method):
        names, values = [], []
        for metric in self.metrics:
            name, value = getattr(metric, method)()
            names.extend(name if isinstance(name, list) else [name])
            values.extend(value if isinstance(value, list) else [value])
        return names, values

    def get(self):
        return self._collect("get")

    def get_global(self):
        return self._collect("get_global")

    def get_config(self):
        config = super().get_config()
        config.update({"metrics": [i.get_config() for i in self.metrics]})
        return config


@register
class CustomMetric(EvalMetric):
    """A metric from a function ``feval(label, pred)`` of NumPy arrays that
    returns ``sum_metric`` or ``(sum_metric, num_inst)``.

    ``update`` copies each label and prediction to NumPy, so it waits for
    the batch (unlike the built-in metrics).

    Parameters
    ----------
    feval : callable
    name : str, optional
        Defaults to ``feval.__name__`` (``custom(<lambda>)`` for lambdas).
    allow_extra_outputs : bool
        Allow more predictions than labels (RNN states among the outputs).
    """
    def __init__(self, feval, name=None, allow_extra_outputs=False, output_names=None,
                 label_names=None):
        if name is None:
            name = feval.__name__
            if "<" in name:
                name = f"custom({name})"
        super().__init__(name, feval=feval, allow_extra_outputs=allow_extra_outputs,
                         output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self._feval = feval
        self._allow_extra_outputs = allow_extra_outputs

    def update(self, labels, preds):
        if not self._allow_extra_outputs:
            labels, preds = check_label_shapes(labels, preds, True)
        for pred, label in zip(preds, labels):
            reval = self._feval(as_nd(label).asnumpy(), as_nd(pred).asnumpy())
            if isinstance(reval, tuple):
                self._add(*reval)
            else:
                self._add(reval, 1)

    def get_config(self):
        raise NotImplementedError("CustomMetric cannot be serialized")


def np(numpy_feval, name=None, allow_extra_outputs=False):
    """A CustomMetric from ``numpy_feval(label, pred) -> float`` on NumPy
    arrays (its ``update`` waits for each batch)."""
    def feval(label, pred):
        return numpy_feval(label, pred)
    feval.__name__ = numpy_feval.__name__
    return CustomMetric(feval, name, allow_extra_outputs)
