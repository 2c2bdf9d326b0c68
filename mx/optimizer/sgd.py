"""SGD and its relatives: SGD (ccSGD), NAG, Signum, DCASGD, SGLD, and Test.

Each update calls the fused operator MXNet 1.9.1 calls (``sgd_update``,
``sgd_mom_update``, ``mp_sgd_*``, the aggregated ``multi_*`` forms,
``nag_mom_update``, ``signum_update``, ``signsgd_update``); DCASGD and SGLD
are NDArray expressions, as in MXNet.  Nothing waits for the device."""
import math
import os

import numpy

from mx import ndarray as nd
from mx.optimizer.optimizer import Optimizer, _warn_float16, flatten_list, register


def _aggregation_size(default):
    return int(os.getenv("MXNET_OPTIMIZER_AGGREGATION_SIZE", str(default)))


def _sgd_kwargs(opt, momentum):
    kwargs = {"rescale_grad": opt.rescale_grad}
    if momentum > 0:
        kwargs["momentum"] = momentum
    if opt.clip_gradient:
        kwargs["clip_gradient"] = opt.clip_gradient
    return kwargs


def _as_lists(indices, weights, grads, states):
    if isinstance(indices, (tuple, list)):
        return list(indices), list(weights), list(grads), list(states)
    return [indices], [weights], [grads], [states]


def _all_dense(weights, grads):
    return all(w.stype == "default" and g.stype == "default" for w, g in zip(weights, grads))


def sgd_one(opt, weight, grad, state, lr, wd, kwargs, multi_precision, lazy_update=True):
    """One SGD step of one weight: momentum state or None; with
    multi_precision the state is (momentum or None, weight32)."""
    if not multi_precision:
        if state is not None:
            nd.sgd_mom_update(weight, grad, state, out=weight, lazy_update=lazy_update, lr=lr,
                              wd=wd, **kwargs)
        else:
            nd.sgd_update(weight, grad, out=weight, lazy_update=lazy_update, lr=lr, wd=wd,
                          **kwargs)
    elif state[0] is not None:
        nd.mp_sgd_mom_update(weight, grad, state[0], state[1], out=weight, lr=lr, wd=wd,
                             **kwargs)
    else:
        nd.mp_sgd_update(weight, grad, state[1], out=weight, lr=lr, wd=wd, **kwargs)


class MultiPrecisionDispatch:
    """update/update_multi_precision of the optimizers whose ``_update_impl``
    takes the multi_precision flag (and, aggregated, lists)."""

    def _uses_multi_precision(self, weight):
        first = weight[0] if isinstance(weight, (tuple, list)) else weight
        return self.multi_precision and first.dtype == numpy.float16

    def update(self, index, weight, grad, state):
        self._update_impl(index, weight, grad, state, multi_precision=False)

    def update_multi_precision(self, index, weight, grad, state):
        self._update_impl(index, weight, grad, state,
                          multi_precision=self._uses_multi_precision(weight))


class _MomentumStates(MultiPrecisionDispatch):
    """create_state of the SGD-like optimizers: a momentum array or None;
    with multi_precision on float16 ``(momentum or None, weight32)`` (note
    the order: MXNet's base class puts the master copy first)."""

    def create_state_multi_precision(self, index, weight):
        if self.multi_precision and weight.dtype == numpy.float16:
            weight32 = weight.astype(numpy.float32)
            return (self.create_state(index, weight32), weight32)
        _warn_float16(self, weight)
        return self.create_state(index, weight)

    def create_state(self, index, weight):
        if self.momentum == 0.0:
            return None
        stype = weight.stype if getattr(self, "lazy_update", True) else "default"
        return nd.zeros(weight.shape, weight.context, dtype=weight.dtype, stype=stype)


@register
class SGD(_MomentumStates, Optimizer):
    """SGD with momentum and weight decay (MXNet's ``mx.optimizer.SGD``).

    ``state = momentum * state + lr * (rescale_grad * clip(grad) + wd * weight);
    weight -= state``.  Lists of dense weights (the Updater's aggregated
    call, MXNET_OPTIMIZER_AGGREGATION_SIZE at a time, default 4) go through
    one ``multi_sgd_*`` operator call; row_sparse gradients with
    ``lazy_update`` update only their rows.

    Parameters
    ----------
    momentum : float, default 0.0
    lazy_update : bool, default True
    multi_precision : bool, default False
        float32 master weights for float16 ones (``mp_sgd_*`` operators).
    """

    def __init__(self, momentum=0.0, lazy_update=True, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.lazy_update = lazy_update
        self.aggregate_num = _aggregation_size(4)

    def _update_impl(self, indices, weights, grads, states, multi_precision=False):
        indices, weights, grads, states = _as_lists(indices, weights, grads, states)
        self._update_count(indices)
        lrs = self._get_lrs(indices)
        wds = self._get_wds(indices)
        kwargs = _sgd_kwargs(self, self.momentum)
        if _all_dense(weights, grads):
            _multi_sgd(self.momentum, weights, grads, states, lrs, wds, kwargs, multi_precision)
            return
        for weight, grad, state, lr, wd in zip(weights, grads, states, lrs, wds):
            sgd_one(self, weight, grad, state, lr, wd, kwargs, multi_precision,
                    self.lazy_update)


def _multi_sgd(momentum, weights, grads, states, lrs, wds, kwargs, multi_precision):
    """One aggregated multi_[mp_]sgd[_mom]_update call over all the weights."""
    common = dict(out=weights, num_weights=len(weights), lrs=lrs, wds=wds, **kwargs)
    if not multi_precision:
        if momentum > 0:
            nd.multi_sgd_mom_update(*flatten_list(zip(weights, grads, states)), **common)
        else:
            nd.multi_sgd_update(*flatten_list(zip(weights, grads)), **common)
    elif momentum > 0:
        moms, weights32 = zip(*states)
        nd.multi_mp_sgd_mom_update(*flatten_list(zip(weights, grads, moms, weights32)),
                                   **common)
    else:
        weights32 = [s[1] for s in states]
        nd.multi_mp_sgd_update(*flatten_list(zip(weights, grads, weights32)), **common)


@register
class ccSGD(SGD):  # noqa: N801  (MXNet's name)
    """[DEPRECATED] The same as SGD."""


@register
class NAG(_MomentumStates, Optimizer):
    """Nesterov accelerated gradient (``nag_mom_update``; ``sgd_update``
    without momentum; ``mp_nag_mom_update``/``mp_sgd_update`` for float16
    with multi_precision)."""

    def __init__(self, momentum=0.0, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum

    def create_state(self, index, weight):
        if self.momentum == 0.0:
            return None
        return nd.zeros(weight.shape, weight.context, dtype=weight.dtype)

    def _update_impl(self, index, weight, grad, state, multi_precision=False):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        kwargs = _sgd_kwargs(self, self.momentum)
        if not multi_precision:
            if state is not None:
                nd.nag_mom_update(weight, grad, state, out=weight, lr=lr, wd=wd, **kwargs)
            else:
                nd.sgd_update(weight, grad, out=weight, lr=lr, wd=wd, **kwargs)
        elif state[0] is not None:
            nd.mp_nag_mom_update(weight, grad, state[0], state[1], out=weight, lr=lr, wd=wd,
                                 **kwargs)
        else:
            nd.mp_sgd_update(weight, grad, state[1], out=weight, lr=lr, wd=wd, **kwargs)

    def update_multi_precision(self, index, weight, grad, state):
        self._update_impl(index, weight, grad, state,
                          multi_precision=self.multi_precision
                          and weight.dtype == numpy.float16
                          and isinstance(state, (tuple, list)))


@register
class Signum(Optimizer):
    """signSGD / Signum (``signsgd_update`` without momentum,
    ``signum_update`` with it); ``wd_lh`` is decoupled weight decay."""

    def __init__(self, learning_rate=0.01, momentum=0.9, wd_lh=0.0, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.momentum = momentum
        self.wd_lh = wd_lh

    def create_state(self, index, weight):
        if self.momentum == 0.0:
            return None
        return nd.zeros(weight.shape, weight.context, dtype=weight.dtype, stype=weight.stype)

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        kwargs = _sgd_kwargs(self, self.momentum)
        if self.wd_lh:
            kwargs["wd_lh"] = self.wd_lh
        if state is not None:
            nd.signum_update(weight, grad, state, out=weight, lr=lr, wd=wd, **kwargs)
        else:
            nd.signsgd_update(weight, grad, out=weight, lr=lr, wd=wd, **kwargs)


def _rescaled_clipped(opt, grad):
    grad = grad * opt.rescale_grad
    if opt.clip_gradient is not None:
        grad = nd.clip(grad, -opt.clip_gradient, opt.clip_gradient)
    return grad


@register
class DCASGD(Optimizer):
    """Delay-compensated asynchronous SGD: ``mom = momentum * mom - lr *
    (g + wd * w + lamda * g * g * (w - w_prev))``, ``w += mom``.  State:
    (momentum or None, previous weight).  MXNet 1.9.1 fails on momentum > 0
    (``if mom:`` on an array); here it works as its formula says."""

    def __init__(self, momentum=0.0, lamda=0.04, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.weight_previous = {}
        self.lamda = lamda

    def create_state(self, index, weight):
        mom = None if self.momentum == 0.0 else nd.zeros(weight.shape, weight.context,
                                                         dtype=weight.dtype)
        return (mom, weight.copy())

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        grad = _rescaled_clipped(self, grad)
        mom, previous = state
        step = -lr * (grad + wd * weight + self.lamda * grad * grad * (weight - previous))
        if mom is not None:
            mom[:] *= self.momentum
            mom[:] += step
            step = mom
        previous[:] = weight
        weight[:] += step


@register
class SGLD(Optimizer):
    """Stochastic gradient Langevin dynamics: ``w -= lr / 2 * (g + wd * w)``
    plus Gaussian noise of variance ``lr`` (mx.random's generator)."""

    def create_state(self, index, weight):
        return None

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        grad = _rescaled_clipped(self, grad)
        weight[:] += -lr / 2 * (grad + wd * weight)
        weight[:] += nd.random.normal(0, math.sqrt(lr), shape=weight.shape, dtype=weight.dtype,
                                      ctx=weight.context)


@register
class Test(Optimizer):
    """The test optimizer: ``weight += grad * rescale_grad``, state = weight."""

    def create_state(self, index, weight):
        return nd.zeros(weight.shape, weight.context)

    def update(self, index, weight, grad, state):
        weight[:] += grad * self.rescale_grad
        state[:] = weight
