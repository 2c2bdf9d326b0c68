"""Whether operator calls run in training mode (OpContext::is_train) and
whether autograd records them.

Dropout drops and BatchNorm normalises with batch statistics only in
training.  Both flags are per thread, as MXNet's ``Imperative::is_train_``
and ``is_recording_``: the invokers read the training flag when a call is
pushed and hand it to the kernel (``MXOpCall.is_train``, or
``params["_is_train"]`` for Python computes), so changing it affects
exactly the calls pushed afterwards.  The executor's
``forward(is_train=...)`` and ``mx.autograd.train_mode()`` set it;
``mx.autograd.record()`` sets both.

Where recording happens (mx-ndarray's call path) a C-level count of the
threads now recording keeps the check off the unrecorded path: it
registers in ``_record_listeners`` a function called with +1 or -1 when a
thread's recording flag changes.
"""
import contextlib
import threading

__all__ = ["is_training", "set_training", "train_mode", "predict_mode",
           "is_recording", "set_recording"]


class _State(threading.local):
    train = False       # the default, found without raising AttributeError per call
    record = False      # autograd is recording (mx.autograd.record)


_state = _State()
_record_listeners = []     # f(delta): a thread's recording flag turned on (+1) or off (-1)


def is_training():
    """True when calls pushed from this thread now run in training mode."""
    return _state.train


def set_training(train):
    """Sets this thread's training mode; returns the previous one."""
    previous = is_training()
    _state.train = bool(train)
    return previous


def is_recording():
    """True when autograd records the calls this thread pushes."""
    return _state.record


def set_recording(record):
    """Sets whether this thread's calls are recorded; returns the previous
    setting."""
    previous = _state.record
    record = bool(record)
    if record != previous:
        _state.record = record
        for listener in _record_listeners:
            listener(1 if record else -1)
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
