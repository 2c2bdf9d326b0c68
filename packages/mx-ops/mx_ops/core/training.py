"""Whether operator calls run in training mode: OpContext::is_train.

Dropout drops and BatchNorm normalises with batch statistics only in
training.  The flag is per thread, as MXNet's ``Imperative::is_train_``:
the invokers read it when a call is pushed and hand it to the kernel
(``MXOpCall.is_train``, or ``params["_is_train"]`` for Python computes),
so changing it affects exactly the calls pushed afterwards.  The executor's
``forward(is_train=...)`` and ``mx.autograd.train_mode()`` set it.
"""
import contextlib
import threading

__all__ = ["is_training", "set_training", "train_mode", "predict_mode"]


class _State(threading.local):
    train = False       # the default, found without raising AttributeError per call
    record = False      # autograd is recording (mx.autograd.record)


_state = _State()


def is_training():
    """True when calls pushed from this thread now run in training mode."""
    return _state.train


def set_training(train):
    """Sets this thread's training mode; returns the previous one."""
    previous = is_training()
    _state.train = bool(train)
    return previous


@contextlib.contextmanager
def _mode(train):
    previous = set_training(train)
    try:
        yield
    finally:
        set_training(previous)


def train_mode():
    """``with train_mode():`` calls inside run in training mode."""
    return _mode(True)


def predict_mode():
    """``with predict_mode():`` calls inside run in inference mode."""
    return _mode(False)
