"""``mx.callback``: callbacks for ``Module.fit``, as in MXNet 1.9.1, plus
an epoch progress bar and a plot of the training curves.

How ``fit`` calls them (MXNet 1.9.1's contract):

- ``batch_end_callback(BatchEndParam(epoch, nbatch, eval_metric, locals))``
  after each training batch; ``eval_metric`` is the training metric
  (reading it waits for the device, so a callback reads it only when it logs);
- ``epoch_end_callback(epoch, symbol, arg_params, aux_params)`` after each epoch;
- ``eval_end_callback(BatchEndParam(epoch, nbatch, eval_metric, locals))``
  after scoring ``eval_data``, with the validation metric.

TrainingCurves takes the three roles through its methods ``batch_end``,
``epoch_end`` and ``eval_end``.
"""
import logging
import math
import time

from mx.model import save_checkpoint

__all__ = ["module_checkpoint", "do_checkpoint", "log_train_metric", "Speedometer",
           "ProgressBar", "LogValidationMetricsCallback", "EpochProgressBar", "TrainingCurves"]


def module_checkpoint(mod, prefix, period=1, save_optimizer_states=False):
    """An epoch-end callback saving ``mod`` (``mod.save_checkpoint``) every
    ``period`` epochs."""
    period = int(max(1, period))

    def _callback(iter_no, sym=None, arg=None, aux=None):
        if (iter_no + 1) % period == 0:
            mod.save_checkpoint(prefix, iter_no + 1, save_optimizer_states)
    return _callback


def do_checkpoint(prefix, period=1):
    """An epoch-end callback writing ``prefix-symbol.json`` and
    ``prefix-%04d.params`` (epoch + 1) every ``period`` epochs."""
    period = int(max(1, period))

    def _callback(iter_no, sym, arg, aux):
        if (iter_no + 1) % period == 0:
            save_checkpoint(prefix, iter_no + 1, sym, arg, aux)
    return _callback


def log_train_metric(period, auto_reset=False):
    """A batch-end callback logging the training metric every ``period``
    batches (``reset_local`` after each log with ``auto_reset``)."""
    def _callback(param):
        if param.nbatch % period == 0 and param.eval_metric is not None:
            for name, value in param.eval_metric.get_name_value():
                logging.info("Iter[%d] Batch[%d] Train-%s=%f", param.epoch, param.nbatch,
                             name, value)
            if auto_reset:
                param.eval_metric.reset_local()
    return _callback


class Speedometer:
    """Logs samples/s and the training metric every ``frequent`` batches::

        Epoch[0] Batch [0-50]	Speed: 1910.41 samples/sec	accuracy=0.200000

    With ``auto_reset`` the metric restarts after each log (``reset_local``),
    so each line shows the last ``frequent`` batches.  The speed counts wall
    time between logs; logging reads the metric, which waits for the
    batches queued so far.
    """
    def __init__(self, batch_size, frequent=50, auto_reset=True):
        self.batch_size = batch_size
        self.frequent = frequent
        self.init = False
        self.tic = 0
        self.last_count = 0
        self.auto_reset = auto_reset

    def __call__(self, param):
        count = param.nbatch
        if self.last_count > count:
            self.init = False
        self.last_count = count
        if not self.init:
            self.init = True
            self.tic = time.time()
            return
        if count % self.frequent != 0:
            return
        name_value = None
        if param.eval_metric is not None:
            name_value = param.eval_metric.get_name_value()     # waits: time it in
        try:
            speed = self.frequent * self.batch_size / (time.time() - self.tic)
        except ZeroDivisionError:
            speed = float("inf")
        if name_value is None:
            logging.info("Iter[%d] Batch [%d]\tSpeed: %.2f samples/sec", param.epoch, count,
                         speed)
        elif self.auto_reset:
            param.eval_metric.reset_local()
            msg = "Epoch[%d] Batch [%d-%d]\tSpeed: %.2f samples/sec" + "\t%s=%f" * len(name_value)
            logging.info(msg, param.epoch, count - self.frequent, count, speed,
                         *sum(name_value, ()))
        else:
            msg = "Epoch[%d] Batch [0-%d]\tSpeed: %.2f samples/sec" + "\t%s=%f" * len(name_value)
            logging.info(msg, param.epoch, count, speed, *sum(name_value, ()))
        self.tic = time.time()


class ProgressBar:
    """Logs a text bar of the batches done out of ``total`` each batch::

        [========--------] 50.0%
    """
    def __init__(self, total, length=80):
        self.bar_len = length
        self.total = total

    def __call__(self, param):
        count = param.nbatch
        filled_len = int(round(self.bar_len * count / float(self.total)))
        percents = math.ceil(100.0 * count / float(self.total))
        prog_bar = "=" * filled_len + "-" * (self.bar_len - filled_len)
        logging.info("[%s] %s%s\r", prog_bar, percents, "%")


class LogValidationMetricsCallback:
    """An eval-end callback logging ``Epoch[e] Validation-name=value``."""
    def __call__(self, param):
        if not param.eval_metric:
            return
        for name, value in param.eval_metric.get_name_value():
            logging.info("Epoch[%d] Validation-%s=%f", param.epoch, name, value)


from mx._progress import EpochProgressBar  # noqa: E402
from mx._training_curves import TrainingCurves  # noqa: E402
