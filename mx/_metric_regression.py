"""Probability, regression and loss metrics: Perplexity, MAE, MSE, RMSE,
CrossEntropy, NegativeLogLikelihood, PearsonCorrelation, Loss.

Each batch's statistic is computed with NDArray operations on the
predictions' device and queued unread (see ``_metric_base``)."""
import math

import numpy

from mx import ndarray
from mx._metric_base import EvalMetric, alias, as_nd, check_label_shapes, register
from mx._metric_classification import _pairs


@register
class Perplexity(EvalMetric):
    """exp of the mean negative log of the probability given to the label.

    Parameters
    ----------
    ignore_label : int or None
        Labels equal to it are not counted; None counts all.
    axis : int, default -1
        The class axis of the predictions.
    """
    def __init__(self, ignore_label, axis=-1, name="perplexity", output_names=None,
                 label_names=None):
        super().__init__(name, ignore_label=ignore_label, output_names=output_names,
                         label_names=label_names, has_global_stats=True)
        self.ignore_label = ignore_label
        self.axis = axis

    def update(self, labels, preds):
        if len(labels) != len(preds):
            raise ValueError(f"Perplexity: {len(labels)} labels but {len(preds)} predictions")
        for label, pred in zip(labels, preds):
            pred = as_nd(pred)
            label = as_nd(label, like=pred)
            if label.size * pred.shape[-1] != pred.size:
                raise ValueError(f"Perplexity: shape mismatch: labels {label.shape} vs. "
                                 f"predictions {pred.shape}")
            label = label.reshape((label.size,))
            prob = ndarray.pick(pred, label.astype("int32"), axis=self.axis)
            num = prob.size
            if self.ignore_label is not None:
                ignore = (label == self.ignore_label).astype(prob.dtype)
                prob = prob * (1 - ignore) + ignore
                num = num - ndarray.sum(ignore).astype("float64")
            loss = -ndarray.sum(ndarray.log(ndarray.maximum(prob, 1e-10)))
            self._add(loss.astype("float64"), num)

    def get(self):
        num = self.num_inst
        if num == 0:
            return self.name, float("nan")
        return self.name, math.exp(self.sum_metric / num)

    def get_global(self):
        num = self.global_num_inst
        if num == 0:
            return self.name, float("nan")
        return self.name, math.exp(self.global_sum_metric / num)


def _column(x):
    """A 1-D array as a column (MXNet's regression metrics compare (N, 1) to (N, k))."""
    return x.reshape((x.shape[0], 1)) if x.ndim == 1 else x


class _PerBatchMean(EvalMetric):
    """Base of MAE, MSE and RMSE: the mean over the batch, averaged over updates."""
    def __init__(self, name, output_names, label_names):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, labels, preds):
        for label, pred in _pairs(labels, preds):
            diff = ndarray.broadcast_sub(_column(label).astype(pred.dtype), _column(pred))
            self._add(self._batch_value(diff).astype("float64"), 1)


@register
class MAE(_PerBatchMean):
    """Mean absolute error, averaged over updates."""
    def __init__(self, name="mae", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _batch_value(diff):
        return ndarray.mean(ndarray.abs(diff))


@register
class MSE(_PerBatchMean):
    """Mean squared error, averaged over updates."""
    def __init__(self, name="mse", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _batch_value(diff):
        return ndarray.mean(ndarray.square(diff))


@register
class RMSE(_PerBatchMean):
    """Root mean squared error of each update, averaged over updates."""
    def __init__(self, name="rmse", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _batch_value(diff):
        return ndarray.sqrt(ndarray.mean(ndarray.square(diff)))


class _LabelLogProb(EvalMetric):
    """Base of CrossEntropy and NLL: -sum(log(p[label] + eps)) per sample."""
    def __init__(self, eps, name, output_names, label_names):
        super().__init__(name, eps=eps, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.eps = eps

    def update(self, labels, preds):
        for label, pred in _pairs(labels, preds):
            label = label.reshape((-1,))
            if label.shape[0] != pred.shape[0]:
                raise ValueError(f"{type(self).__name__}: {label.shape[0]} labels but "
                                 f"{pred.shape[0]} predictions (shape {pred.shape})")
            prob = ndarray.pick(pred, label.astype("int32"), axis=1)
            loss = -ndarray.sum(ndarray.log(prob + self.eps))
            self._add(loss.astype("float64"), label.shape[0])


@register
@alias("ce")
class CrossEntropy(_LabelLogProb):
    """Cross entropy of (N, K) probabilities against class labels."""
    def __init__(self, eps=1e-12, name="cross-entropy", output_names=None, label_names=None):
        super().__init__(eps, name, output_names, label_names)


@register
@alias("nll_loss")
class NegativeLogLikelihood(_LabelLogProb):
    """Negative log-likelihood of (N, K) probabilities against class labels."""
    def __init__(self, eps=1e-12, name="nll-loss", output_names=None, label_names=None):
        super().__init__(eps, name, output_names, label_names)


def _flat64(x):
    return x.reshape((-1,)).astype("float64")


@register
@alias("pearsonr")
class PearsonCorrelation(EvalMetric):
    """Pearson correlation of predictions and labels.

    ``average='macro'`` averages the correlation of each batch; ``'micro'``
    correlates all samples since ``reset()`` with MXNet 1.9.1's streaming
    update (which ``reset_local`` does not restart).  MXNet's micro
    ``get_global`` returns 0; here it returns the same correlation as ``get``.
    """
    def __init__(self, name="pearsonr", output_names=None, label_names=None, average="macro"):
        if average not in ("macro", "micro"):
            raise ValueError(f"PearsonCorrelation: average must be 'macro' or 'micro', "
                             f"got {average!r}")
        self.average = average
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def reset(self):
        super().reset()
        self._n = 0
        self._mean = {"l": 0.0, "p": 0.0}
        self._sse = {"l": 0.0, "p": 0.0}
        self._cov = 0.0

    def _streaming(self, which, x):
        """MXNet's batch update of count, mean and sum of squared deviations."""
        mean = self._mean[which]
        delta = ndarray.broadcast_sub(x, mean) if not isinstance(mean, float) else x - mean
        mean = mean + ndarray.sum(delta) / self._n
        self._sse[which] = self._sse[which] + ndarray.sum(delta * ndarray.broadcast_sub(x, mean))
        self._mean[which] = mean

    def update(self, labels, preds):
        for label, pred in _pairs(labels, preds):
            check_label_shapes(label, pred, False, True)
            y, x = _flat64(label), _flat64(pred)
            if self.average == "macro":
                xm = ndarray.broadcast_sub(x, ndarray.mean(x, keepdims=True))
                ym = ndarray.broadcast_sub(y, ndarray.mean(y, keepdims=True))
                r = ndarray.sum(xm * ym) / ndarray.sqrt(ndarray.sum(xm * xm)
                                                         * ndarray.sum(ym * ym))
                self._add(r, 1)
                continue
            self._add(0.0, 1)
            self._n += y.size
            self._streaming("l", y)
            mean_p = self._mean["p"]
            dp = ndarray.broadcast_sub(x, mean_p) if not isinstance(mean_p, float) else x - mean_p
            self._cov = self._cov + ndarray.sum(ndarray.broadcast_sub(y, self._mean["l"]) * dp)
            self._streaming("p", x)

    def _micro(self):
        n = self._n
        read = lambda v: v if isinstance(v, float) else float(v.asnumpy()[0])  # noqa: E731
        sse_p, sse_l = read(self._sse["p"]), read(self._sse["l"])
        with numpy.errstate(divide="ignore", invalid="ignore"):
            return numpy.float64(read(self._cov)) / (
                (n - 1) * numpy.sqrt(sse_p / (n - 1)) * numpy.sqrt(sse_l / (n - 1)))

    def get(self):
        if self.num_inst == 0:
            return self.name, float("nan")
        if self.average == "macro":
            return super().get()
        return self.name, float(self._micro())

    def get_global(self):
        if self.average == "macro" or self.global_num_inst == 0:
            return super().get_global()
        return self.name, float(self._micro())


@register
class Loss(EvalMetric):
    """The mean of the outputs (a loss head's output): sum over elements and updates."""
    def __init__(self, name="loss", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, _, preds):
        if not isinstance(preds, (list, tuple)):
            preds = [preds]
        for pred in preds:
            pred = as_nd(pred)
            self._add(ndarray.sum(pred).astype("float64"), pred.size)


@register
class Torch(Loss):
    """Dummy metric for torch criterions."""
    def __init__(self, name="torch", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)


@register
class Caffe(Loss):
    """Dummy metric for caffe criterions."""
    def __init__(self, name="caffe", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)


__all__ = ["Perplexity", "MAE", "MSE", "RMSE", "CrossEntropy", "NegativeLogLikelihood",
           "PearsonCorrelation", "Loss", "Torch", "Caffe"]
