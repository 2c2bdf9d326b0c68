"""Autograd on NDArrays (MXNet's ``mxnet.autograd``, the NDArray side).

``record()`` turns recording on for this thread: the calls whose inputs
are on the tape (``attach_grad``/``mark_variables`` variables, outputs of
recorded calls) are recorded in the call path (mx_ndarray._tape);
``backward``/``grad`` differentiate the tape with the registered gradient
makers (mx_ndarray._autograd replays programs mx-graph builds).
``mx.autograd`` adds Function and get_symbol, which need mx-graph.
"""
from mx_ops.core.training import (is_recording, is_training, predict_mode, set_recording,
                                  set_training, train_mode)
from mx_ndarray import _autograd
from mx_ndarray._ndarray import NDArray

__all__ = ["record", "pause", "train_mode", "predict_mode", "is_recording", "is_training",
           "set_recording", "set_training", "mark_variables", "backward", "grad"]


class _RecordingStateScope:
    """Sets recording and training on entry (None leaves one as it is) and
    restores them on exit, exceptions included."""

    def __init__(self, is_record, train_mode):   # noqa: F811 (MXNet's argument name)
        self._enter_is_record = is_record
        self._enter_train_mode = train_mode
        self._prev_is_record = None
        self._prev_train_mode = None

    def __enter__(self):
        if self._enter_is_record is not None:
            self._prev_is_record = set_recording(self._enter_is_record)
        if self._enter_train_mode is not None:
            self._prev_train_mode = set_training(self._enter_train_mode)

    def __exit__(self, ptype, value, trace):
        if self._enter_is_record is not None and self._prev_is_record != self._enter_is_record:
            set_recording(self._prev_is_record)
        if (self._enter_train_mode is not None
                and self._prev_train_mode != self._enter_train_mode):
            set_training(self._prev_train_mode)


def record(train_mode=True):  # noqa: F811
    """``with record():`` records the calls inside for ``backward``, in
    training mode unless ``train_mode`` is False."""
    return _RecordingStateScope(True, train_mode)


def pause(train_mode=False):  # noqa: F811
    """``with pause():`` inside record(): the calls inside are not recorded
    (and run in inference mode unless ``train_mode``)."""
    return _RecordingStateScope(False, train_mode)


def mark_variables(variables, gradients, grad_reqs="write"):
    """Marks NDArrays ``variables`` as the tape's variables: backward writes
    (grad_req 'write'), adds ('add') or skips ('null') their gradients into
    ``gradients``.  ``grad_reqs`` is one string or one per variable."""
    if isinstance(variables, NDArray):
        assert isinstance(gradients, NDArray)
        variables, gradients = [variables], [gradients]
    if isinstance(grad_reqs, str):
        grad_reqs = [grad_reqs] * len(variables)
    if not len(variables) == len(gradients) == len(grad_reqs):
        raise ValueError(f"mark_variables: {len(variables)} variables, {len(gradients)} "
                         f"gradients and {len(grad_reqs)} grad_reqs; they must match")
    for var, g, req in zip(variables, gradients, grad_reqs):
        if not isinstance(var, NDArray):
            raise TypeError(f"mark_variables: a variable must be an NDArray, got "
                            f"{type(var).__name__}")
        _autograd.mark(var, g, req)


def _heads(heads, head_grads, api):
    if isinstance(heads, NDArray):
        heads = [heads]
    heads = list(heads)
    if head_grads is None:
        head_grads = [None] * len(heads)
    else:
        if isinstance(head_grads, NDArray):
            head_grads = [head_grads]
        head_grads = list(head_grads)
        if len(head_grads) != len(heads):
            raise ValueError(f"{api}: heads and head_grads must be lists of the same length, "
                             f"got {len(heads)} and {len(head_grads)}")
    for i, h in enumerate(heads):
        if not isinstance(h, NDArray):
            raise TypeError(f"{api}: heads[{i}] must be an NDArray, got {type(h).__name__}")
    return heads, head_grads


def backward(heads, head_grads=None, retain_graph=False, train_mode=True):  # noqa: F811
    """Computes the gradients of ``heads`` with respect to the marked
    variables into their grad arrays (as their grad_req says);
    ``head_grads`` default to ones.  ``train_mode`` is the training flag
    the backward calls run with."""
    heads, head_grads = _heads(heads, head_grads, "backward")
    _autograd.backward(heads, head_grads, None, bool(retain_graph), bool(train_mode), False)


def grad(heads, variables, head_grads=None, retain_graph=None, create_graph=False,
         train_mode=True):  # noqa: F811
    """The gradients of ``heads`` with respect to ``variables``, as new
    NDArrays (the variables' grad arrays are not touched).  With
    ``create_graph`` the gradient computation is recorded, so its result
    can be differentiated again (where the gradient makers are
    differentiable).  ``retain_graph`` defaults to ``create_graph``."""
    heads, head_grads = _heads(heads, head_grads, "grad")
    single = isinstance(variables, NDArray)
    variables = [variables] if single else list(variables)
    if not variables:
        raise ValueError("grad: variables cannot be an empty list")
    for i, v in enumerate(variables):
        if not isinstance(v, NDArray):
            raise TypeError(f"grad: variables[{i}] must be an NDArray, got {type(v).__name__}")
    retain_graph = create_graph if retain_graph is None else retain_graph
    out = _autograd.backward(heads, head_grads, variables, bool(retain_graph),
                             bool(train_mode), bool(create_graph))
    return out[0] if single else out
