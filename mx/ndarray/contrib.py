"""``mx.ndarray.contrib``: the ``_contrib_*`` operators as NDArray functions
(``mx.ndarray.contrib.<name>`` is ``mx.ndarray._internal._contrib_<name>``), as in
MXNet 1.x.  Operators registered under the prefix appear here, beside
MXNet's Python-level isinf, isfinite and isnan (compositions of operators,
as in MXNet's python/mxnet/ndarray/contrib.py)."""
import math


from mx_ndarray import _internal as _internal_ops
from mx_ndarray import op as _op
from mx_ndarray.ndarray import NDArray as _NDArray
from mx._prefixed import prefixed as _prefixed


def isinf(data):
    """1 where an element of ``data`` is +inf or -inf, else 0 (data's dtype)."""
    return _internal_ops._equal_scalar(_op.abs(data), scalar=math.inf)


def isnan(data):
    """1 where an element of ``data`` is NaN, else 0 (data's dtype)."""
    return _internal_ops._not_equal(data, data)


def isfinite(data):
    """1 where an element of ``data`` is neither infinite nor NaN, else 0."""
    return _op.broadcast_logical_and(
        _internal_ops._not_equal_scalar(_op.abs(data), scalar=math.inf),
        _internal_ops._equal(data, data))


# --- MXNet's Python wrappers of the AdamW and LAMB operators ----------------------------
def _rescale_grad(rescale_grad, ctx):
    """MXNet's _get_rescale_grad: a number becomes a float32 (1,) array on ctx."""
    if isinstance(rescale_grad, _NDArray):
        return rescale_grad.as_in_context(ctx)
    # as a string: the parameter parser takes NaN only spelled out ("nan")
    return _internal_ops._full(shape=(1,), value=repr(float(rescale_grad)), dtype="float32",
                               ctx=ctx)


def adamw_update(weight, grad, mean, var, rescale_grad, lr, eta, beta1=0.9, beta2=0.999,
                 epsilon=1e-8, wd=0, clip_gradient=-1, out=None, name=None, **kwargs):
    """_adamw_update with ``rescale_grad`` an NDArray or a number, as in MXNet."""
    return _internal_ops._adamw_update(
        weight, grad, mean, var, _rescale_grad(rescale_grad, weight.context), lr=lr, eta=eta,
        beta1=beta1, beta2=beta2, epsilon=epsilon, wd=wd, clip_gradient=clip_gradient,
        out=out, name=name, **kwargs)


def mp_adamw_update(weight, grad, mean, var, weight32, rescale_grad, lr, eta, beta1=0.9,
                    beta2=0.999, epsilon=1e-8, wd=0, clip_gradient=-1, out=None, name=None,
                    **kwargs):
    """_mp_adamw_update with ``rescale_grad`` an NDArray or a number, as in MXNet."""
    return _internal_ops._mp_adamw_update(
        weight, grad, mean, var, weight32, _rescale_grad(rescale_grad, weight.context), lr=lr,
        eta=eta, beta1=beta1, beta2=beta2, epsilon=epsilon, wd=wd,
        clip_gradient=clip_gradient, out=out, name=name, **kwargs)


def _interleave(*lists):
    return [x for group in zip(*lists) for x in group]


def multi_adamw_update(weights, grads, mean, var, rescale_grad, lrs, wds, etas, out=None,
                       name=None, size=0, **kwargs):
    """_multi_adamw_update over lists of arrays, as MXNet's wrapper calls it."""
    size = size or len(weights)
    return _internal_ops._multi_adamw_update(
        *_interleave(weights, grads, mean, var), _rescale_grad(rescale_grad, weights[0].context),
        out=out, num_weights=size, lrs=lrs, wds=wds, etas=etas, name=name, **kwargs)


def multi_mp_adamw_update(weights, grads, mean, var, weights32, rescale_grad, lrs, wds, etas,
                          out=None, name=None, size=0, **kwargs):
    """_multi_mp_adamw_update over lists of arrays, as MXNet's wrapper calls it."""
    size = size or len(weights)
    return _internal_ops._multi_mp_adamw_update(
        *_interleave(weights, grads, mean, var, weights32),
        _rescale_grad(rescale_grad, weights[0].context), out=out, num_weights=size, lrs=lrs,
        wds=wds, etas=etas, name=name, **kwargs)


def multi_lamb_update(weights, grads, mean, var, step_count, lrs, wds, out=None,
                      num_tensors=0, **kwargs):
    """_multi_lamb_update over lists of arrays, as MXNet's wrapper calls it."""
    return _internal_ops._multi_lamb_update(
        *_interleave(weights, grads, mean, var), out=out,
        num_tensors=num_tensors or len(weights), step_count=step_count, learning_rates=lrs,
        wds=wds, **kwargs)


def multi_mp_lamb_update(weights, grads, mean, var, weights32, step_count, lrs, wds, out=None,
                         num_tensors=0, **kwargs):
    """_multi_mp_lamb_update over lists of arrays, as MXNet's wrapper calls it."""
    return _internal_ops._multi_mp_lamb_update(
        *_interleave(weights, grads, mean, var, weights32), out=out,
        num_tensors=num_tensors or len(weights), step_count=step_count, learning_rates=lrs,
        wds=wds, **kwargs)


_PYTHON = ["adamw_update", "isfinite", "isinf", "isnan", "mp_adamw_update", "multi_adamw_update",
           "multi_lamb_update", "multi_mp_adamw_update", "multi_mp_lamb_update"]
__getattr__, _operator_dir = _prefixed(__name__, "_contrib_", _internal_ops)


def __dir__():
    return sorted(set(_operator_dir()) | set(_PYTHON))
