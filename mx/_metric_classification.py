"""Classification metrics: Accuracy, TopKAccuracy, F1, MCC, PCC.

Each batch's counts are computed with NDArray operations on the
predictions' device and queued unread (see ``_metric_base``)."""
import numpy

from mx import ndarray
from mx._metric_base import (EvalMetric, _running, _RunningSum, alias, as_nd,
                             check_label_shapes, register)


def _truncated(x):
    """``x`` as integers, truncated toward zero as ``astype('int32')`` does."""
    if numpy.issubdtype(numpy.dtype(x.dtype), numpy.integer):
        return x
    return x.astype("int32")


def _flat(x):
    return x if x.ndim == 1 else x.reshape((-1,))


def _class_ids(label, pred, pred_is_integral):
    """``label`` and ``pred`` as comparable whole numbers, truncated toward
    zero as MXNet's ``astype('int32')``; float ones of one dtype stay float
    (``trunc``: one operation instead of two casts)."""
    if label.dtype == pred.dtype and not numpy.issubdtype(numpy.dtype(pred.dtype),
                                                           numpy.integer):
        return ndarray.trunc(label), pred if pred_is_integral else ndarray.trunc(pred)
    return _truncated(label), _truncated(pred)


def _pairs(labels, preds):
    labels, preds = check_label_shapes(labels, preds, True)
    for label, pred in zip(labels, preds):
        pred = as_nd(pred)
        yield as_nd(label, like=pred), pred


@register
@alias("acc")
class Accuracy(EvalMetric):
    """The fraction of predictions equal to the label.

    Predictions whose shape differs from the label's are class scores:
    their argmax over ``axis`` is the predicted class.
    """
    def __init__(self, axis=1, name="accuracy", output_names=None, label_names=None):
        super().__init__(name, axis=axis, output_names=output_names,
                         label_names=label_names, has_global_stats=True)
        self.axis = axis

    def update(self, labels, preds):
        for label, pred in _pairs(labels, preds):
            scores = pred.shape != label.shape
            if scores:
                pred = ndarray.argmax(pred, axis=self.axis)
            if pred.size != label.size:
                raise ValueError(f"Accuracy: {label.size} labels (shape {label.shape}) but "
                                 f"{pred.size} predicted classes (shape {pred.shape})")
            label, pred = _class_ids(label, pred, pred_is_integral=scores)
            hits = _flat(pred) == _flat(label)
            self._add(ndarray.sum(hits), pred.size)


@register
@alias("top_k_accuracy", "top_k_acc")
class TopKAccuracy(EvalMetric):
    """The fraction of samples whose label is among the ``top_k`` highest scores."""
    def __init__(self, top_k=1, name="top_k_accuracy", output_names=None, label_names=None):
        super().__init__(name, top_k=top_k, output_names=output_names,
                         label_names=label_names, has_global_stats=True)
        self.top_k = top_k
        if self.top_k <= 1:
            raise ValueError(f"TopKAccuracy: top_k must be more than 1 (got {top_k}); "
                             "use Accuracy for top_k = 1")
        self.name += "_%d" % self.top_k

    def update(self, labels, preds):
        for label, pred in _pairs(labels, preds):
            if pred.ndim > 2:
                raise ValueError(f"TopKAccuracy: predictions must have at most 2 dims, "
                                 f"got shape {pred.shape}")
            check_label_shapes(label, pred)
            if pred.ndim == 1:
                self._update_vector(label, pred)
                continue
            top_k = min(pred.shape[1], self.top_k)
            best = ndarray.topk(pred, axis=1, k=top_k, ret_typ="indices", dtype="int32")
            hits = ndarray.broadcast_equal(best, _truncated(label).reshape((-1, 1)))
            self._add(ndarray.sum(hits), pred.shape[0])

    def _update_vector(self, label, pred):
        # MXNet 1.9.1 compares the argpartition of a 1-D score vector with the
        # labels element by element; that order is NumPy's, so NumPy computes it.
        order = numpy.argpartition(pred.asnumpy().astype("float32"), -self.top_k)
        self._add(int((order == label.asnumpy().astype("int32")).sum()), pred.shape[0])


class _BinaryCounts:
    """Running [tp, fp, fn, tn] of a binary classifier, local and global,
    plus a count of labels other than 0 and 1 (reported by ``check``)."""
    def __init__(self, owner):
        self.owner = owner
        self.reset()

    def reset(self):
        self.local = _RunningSum()
        self.total = _RunningSum()
        self.bad = _RunningSum()

    def reset_local(self):
        self.local = _RunningSum()

    @staticmethod
    def batch(label, pred):
        """[tp, fp, fn, tn] (float64, shape (4,)) and the number of
        non-binary labels of one batch, as unread NDArrays."""
        check_label_shapes(label, pred)
        pred_true = ndarray.argmax(pred, axis=1) == 1
        label_int = _truncated(label).reshape((-1,)).astype(pred_true.dtype)
        label_true = label_int == 1
        tp = ndarray.sum(pred_true * label_true)
        npos = ndarray.sum(pred_true)
        lpos = ndarray.sum(label_true)
        lneg = ndarray.sum(label_int == 0)
        n = label_int.size
        counts = ndarray.concat(tp, npos - tp, lpos - tp, lneg - npos + tp, dim=0)
        return counts.astype("float64"), n - lpos - lneg

    def update(self, labels, preds):
        batch = []
        for label, pred in _pairs(labels, preds):
            counts, bad = self.batch(label, pred)
            batch.append(counts)
            self.bad.add(bad)
        counts = batch[0] if len(batch) == 1 else ndarray.add_n(*batch)
        self.local.add(counts)
        self.total.add(counts)
        return counts

    def check(self):
        bad = self.bad.value()
        if bad:
            raise ValueError(f"{self.owner} currently only supports binary classification: "
                             f"{int(bad)} labels other than 0 and 1 were given")

    def read(self, use_global):
        self.check()
        value = (self.total if use_global else self.local).value()
        return numpy.zeros(4) if numpy.isscalar(value) else value


def _fscore(counts):
    tp, fp, fn, _ = (float(c) for c in counts)
    precision = tp / (tp + fp) if tp + fp > 0 else 0.0
    recall = tp / (tp + fn) if tp + fn > 0 else 0.0
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


def _fscore_nd(counts):
    """F1 of a (4,) counts array, on the device (0 where undefined, as MXNet)."""
    tp, fp, fn = counts[0:1], counts[1:2], counts[2:3]
    precision = tp / ndarray.maximum(tp + fp, 1)        # tp is 0 where tp + fp is 0
    recall = tp / ndarray.maximum(tp + fn, 1)
    return 2 * precision * recall / ndarray.maximum(precision + recall, 1e-300)


def _mcc(counts):
    tp, fp, fn, tn = (float(c) for c in counts)
    if not tp + fp + fn + tn:
        return 0.0
    denom = 1.0
    for t in (tp + fp, tp + fn, tn + fp, tn + fn):
        if t != 0.0:
            denom *= t
    return (tp * tn - fp * fn) / numpy.sqrt(denom)


def _mcc_nd(counts):
    """Matthews correlation of a (4,) counts array, zero terms of the
    denominator taken as 1 (as MXNet), on the device."""
    tp, fp, fn, tn = (counts[i:i + 1] for i in range(4))
    denom = 1
    for t in (tp + fp, tp + fn, tn + fp, tn + fn):
        denom = denom * (t + (t == 0))
    return (tp * tn - fp * fn) / ndarray.sqrt(denom)


class _BinaryMetric(EvalMetric):
    """F1 and MCC: 'macro' averages the per-update score, 'micro' scores
    the counts of all updates."""
    _score = None
    _score_nd = None

    def __init__(self, name, average, output_names, label_names):
        if average not in ("macro", "micro"):
            raise ValueError(f"{type(self).__name__}: average must be 'macro' or 'micro', "
                             f"got {average!r}")
        self._average = average
        self._counts = _BinaryCounts(type(self).__name__)
        super().__init__(name=name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    @property
    def average(self):
        return self._average

    def update(self, labels, preds):
        counts = self._counts.update(labels, preds)
        if self._average == "macro":
            # Each update stands alone: its counts are scored, then dropped.
            self._add(type(self)._score_nd(counts), 1)
            self._counts.local, self._counts.total = _RunningSum(), _RunningSum()
        else:
            n = sum(lab.size for lab, _ in _pairs(labels, preds))
            _running(self, "_sum_num_inst").add(n)
            _running(self, "_sum_global_num_inst").add(n)

    def _micro(self, use_global):
        counts = self._counts.read(use_global)
        return type(self)._score(counts) * float(counts.sum())

    @property
    def sum_metric(self):
        if self._average == "micro":
            return self._micro(False)
        self._counts.check()
        return _running(self, "_sum_sum_metric").value()

    @sum_metric.setter
    def sum_metric(self, value):
        self.__dict__["_sum_sum_metric"] = _RunningSum(value)

    @property
    def global_sum_metric(self):
        if self._average == "micro":
            return self._micro(True)
        self._counts.check()
        return _running(self, "_sum_global_sum_metric").value()

    @global_sum_metric.setter
    def global_sum_metric(self, value):
        self.__dict__["_sum_global_sum_metric"] = _RunningSum(value)

    def reset(self):
        super().reset()
        if hasattr(self, "_counts"):
            self._counts.reset()

    def reset_local(self):
        super().reset_local()
        self._counts.reset_local()


@register
class F1(_BinaryMetric):
    """F1 score (harmonic mean of precision and recall) of a binary
    classifier: predictions are (N, 2) scores, labels 0 or 1.

    ``average='macro'`` averages the F1 of each update, ``'micro'`` scores
    the counts of all updates.
    """
    _score = staticmethod(_fscore)
    _score_nd = staticmethod(_fscore_nd)

    def __init__(self, name="f1", output_names=None, label_names=None, average="macro"):
        super().__init__(name, average, output_names, label_names)


@register
class MCC(_BinaryMetric):
    """Matthews correlation coefficient of a binary classifier, with zero
    terms of the denominator replaced by 1 (see PCC for many classes).

    ``average`` as for F1.
    """
    _score = staticmethod(_mcc)
    _score_nd = staticmethod(_mcc_nd)

    def __init__(self, name="mcc", output_names=None, label_names=None, average="macro"):
        super().__init__(name, average, output_names, label_names)


def _pcc(cmat):
    n = cmat.sum()
    x = cmat.sum(axis=1)
    y = cmat.sum(axis=0)
    cov_xx = numpy.sum(x * (n - x))
    cov_yy = numpy.sum(y * (n - y))
    if cov_xx == 0 or cov_yy == 0:
        return float("nan")
    cov_xy = numpy.sum(cmat.diagonal() * n - x * y)
    return cov_xy / (cov_xx * cov_yy) ** 0.5


@register
class PCC(EvalMetric):
    """Multiclass Matthews correlation (Gorodkin's R_K) from the K x K
    confusion matrix of all updates; equals MCC for two classes.

    Predictions are (N, K) scores (counted on the device without waiting)
    or class indices of the label's shape (read on the host: that waits).
    """
    def __init__(self, name="pcc", output_names=None, label_names=None, has_global_stats=True):
        self.k = 2
        super().__init__(name=name, output_names=output_names, label_names=label_names,
                         has_global_stats=has_global_stats)

    def _grow(self, k):
        for key in ("lcm", "gcm"):
            old = getattr(self, key).value()
            grown = numpy.zeros((k, k))
            if not numpy.isscalar(old):
                grown[:old.shape[0], :old.shape[1]] = old
            setattr(self, key, _RunningSum(grown))
        self.k = k

    def update(self, labels, preds):
        for label, pred in _pairs(labels, preds):
            if pred.shape == label.shape:
                self._update_indices(label, pred)
                continue
            if pred.ndim != 2:
                raise ValueError(f"PCC: predictions must be (N, K) scores or class indices "
                                 f"of the label's shape {label.shape}, got {pred.shape}")
            if pred.shape[1] > self.k:
                self._grow(pred.shape[1])
            k = self.k
            label_int = _truncated(label).reshape((-1,))
            onehot_pred = ndarray.one_hot(ndarray.argmax(pred, axis=1), depth=k,
                                          dtype="float64")
            onehot_label = ndarray.one_hot(label_int, depth=k, dtype="float64")
            bcm = ndarray.dot(onehot_pred, onehot_label, transpose_a=True)
            self.bad.add(ndarray.sum((label_int < 0) + (label_int >= k)))
            self.lcm.add(bcm)
            self.gcm.add(bcm)
        self._add_count()

    def _update_indices(self, label, pred):
        label = label.asnumpy().astype("int32")
        pred = pred.asnumpy().astype("int32")
        n = max(pred.max(), label.max())
        if n >= self.k:
            self._grow(int(n) + 1)
        bcm = numpy.zeros((self.k, self.k))
        numpy.add.at(bcm, (pred.ravel(), label.ravel()), 1)
        self.lcm.add(bcm)
        self.gcm.add(bcm)

    def _add_count(self):
        _running(self, "_sum_num_inst").add(1)
        _running(self, "_sum_global_num_inst").add(1)

    def _matrix(self, which):
        bad = self.bad.value()
        if bad:
            raise ValueError(f"PCC: {int(bad)} labels were outside [0, {self.k}), the "
                             "number of classes the predictions scored")
        value = which.value()
        return numpy.zeros((self.k, self.k)) if numpy.isscalar(value) else value

    @property
    def sum_metric(self):
        return _pcc(self._matrix(self.lcm)) * self.num_inst

    @property
    def global_sum_metric(self):
        return _pcc(self._matrix(self.gcm)) * self.global_num_inst

    def reset(self):
        self.global_num_inst = 0
        self.gcm = _RunningSum()
        self.bad = _RunningSum()
        self.reset_local()

    def reset_local(self):
        self.num_inst = 0
        self.lcm = _RunningSum()
