"""Layer-wise adaptive rates for large batches: LARS and LBSGD.

LARS on dense weights is MXNet 1.9.1's device path: ``multi_sum_sq`` of the
weights and the gradients, ``multi_lars`` turning the learning rates into
the layer-wise ones, and the ``preloaded_multi_*sgd*`` updates reading those
rates from the device, with no host round trip.  Sparse gradients (and
LBSGD's ``'lars'`` warm-up) need the norms on the host, as in MXNet."""
import math

import numpy

from mx import ndarray as nd
from mx.optimizer.optimizer import Optimizer, flatten_list, register
from mx.optimizer.sgd import (_MomentumStates, _aggregation_size, _all_dense, _as_lists,
                              _sgd_kwargs, sgd_one)

_NO_LARS_SUFFIXES = ("gamma", "beta", "bias")


@register
class LARS(_MomentumStates, Optimizer):
    """LARS (You et al., 2017): SGD with momentum whose rate per layer is
    ``lr * eta * |w| / (|g| + wd * |w| + eps)`` (when both norms are
    positive), except for biases and batch-norm gamma/beta.

    Parameters
    ----------
    momentum : float, default 0.0
    lazy_update : bool, default True
    eta : float, default 0.001
    eps : float, default 0
    momentum_correction : bool, default True
        Scale the momentum by the scheduler's rate change since the last call.
    """

    def __init__(self, momentum=0.0, lazy_update=True, eta=0.001, eps=0,
                 momentum_correction=True, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.momentum_correction = momentum_correction
        self.lazy_update = lazy_update
        self.aggregate_num = _aggregation_size(4)
        self.eta = eta
        self.eps = eps
        self.skip = 0
        self.last_lr = None
        self.cur_lr = None

    def _get_lrs(self, indices):
        # The momentum correction needs the rate of the previous call.
        if self.cur_lr is not None:
            self.last_lr = self.cur_lr
        lr = self._base_lr()
        if self.cur_lr is None:
            self.last_lr = lr
        self.cur_lr = lr
        return self._multiplied(lr, indices, "lr_mult", self.lr_mult)

    def _no_decay_names(self):
        # LARS decays every '_weight' only (gamma included in the base class).
        return [n for n in self.idx2name.values() if not n.endswith("_weight")]

    def _name(self, index):
        return self.idx2name.get(index, str(index))

    def _host_l2norm(self, v, rescale=False):
        v = v.astype("float32")
        if rescale:
            v *= self.rescale_grad
        return nd.norm(v).asnumpy()[0]

    def _get_lars(self, index, weight, grad, lr, wd):
        if self._name(index).endswith(_NO_LARS_SUFFIXES):
            return lr
        w_norm = self._host_l2norm(weight)
        g_norm = self._host_l2norm(grad, rescale=True)
        if w_norm > 0.0 and g_norm > 0.0:
            return lr * self.eta * w_norm / (g_norm + wd * w_norm + self.eps)
        return lr

    def _update_impl(self, indices, weights, grads, states, multi_precision=False):
        indices, weights, grads, states = _as_lists(indices, weights, grads, states)
        self._update_count(indices)
        lrs = self._get_lrs(indices)
        wds = self._get_wds(indices)
        momentum = self.momentum
        if momentum > 0 and self.momentum_correction and self.last_lr != 0:
            momentum = self.momentum * (self.cur_lr / self.last_lr)
        kwargs = _sgd_kwargs(self, momentum)
        if _all_dense(weights, grads):
            self._preloaded_update(indices, weights, grads, states, lrs, wds, kwargs,
                                   multi_precision)
            return
        for i, w, g, s, lr, wd in zip(indices, weights, grads, states, lrs, wds):
            sgd_one(self, w, g, s, self._get_lars(i, w, g, lr, wd), wd, kwargs,
                    multi_precision, self.lazy_update)

    def _preloaded_update(self, indices, weights, grads, states, lrs, wds, kwargs,
                          multi_precision):
        # LARS layers first, so multi_lars rewrites one leading slice of the rates.
        lars = [i for i, idx in enumerate(indices)
                if not self._name(idx).endswith(_NO_LARS_SUFFIXES)]
        order = lars + [i for i in range(len(indices)) if i not in lars]
        ctx = weights[0].context
        new_lrs = nd.array([lrs[i] for i in order], ctx=ctx, dtype="float32")
        new_wds = nd.array([wds[i] for i in order], ctx=ctx, dtype="float32")
        weights = [weights[i] for i in order]
        grads = [grads[i] for i in order]
        states = [states[i] for i in order]
        n_lars = len(lars)
        if n_lars:
            w_sum_sq = nd.multi_sum_sq(*weights[:n_lars], num_arrays=n_lars)
            g_sum_sq = nd.multi_sum_sq(*grads[:n_lars], num_arrays=n_lars)
            nd.multi_lars(new_lrs[:n_lars], w_sum_sq, g_sum_sq, new_wds[:n_lars], eta=self.eta,
                          eps=self.eps, rescale_grad=self.rescale_grad, out=new_lrs[:n_lars])
        step = self.aggregate_num if self.aggregate_num > 0 else len(weights)
        for start in range(0, len(weights), step):
            part = slice(start, start + step)
            w, g, s = weights[part], grads[part], states[part]
            common = dict(out=w, num_weights=len(w), **kwargs)
            rates = [new_lrs[part], new_wds[part]]
            if not multi_precision:
                if self.momentum > 0:
                    nd.preloaded_multi_sgd_mom_update(*flatten_list(zip(w, g, s)), *rates,
                                                      **common)
                else:
                    nd.preloaded_multi_sgd_update(*flatten_list(zip(w, g)), *rates, **common)
            elif self.momentum > 0:
                moms, w32 = zip(*s)
                nd.preloaded_multi_mp_sgd_mom_update(*flatten_list(zip(w, g, moms, w32)),
                                                     *rates, **common)
            else:
                w32 = [x[1] for x in s]
                nd.preloaded_multi_mp_sgd_update(*flatten_list(zip(w, g, w32)), *rates,
                                                 **common)


@register
class LBSGD(Optimizer):
    """Large-batch SGD: gradients accumulate over ``batch_scale`` calls per
    index; each full macro-batch does one SGD step with the rate scaled by
    the warm-up (``'linear'``, ``'power2'``, ``'sqrt'`` towards
    ``batch_scale`` over ``warmup_epochs * updates_per_epoch`` updates, or
    ``'lars'``: ``sqrt(|w|^2 / (|g|^2 + wd |w|^2))`` clipped to [0.01, 100],
    computed on the host as in MXNet); other calls step with rate 0."""

    def __init__(self, momentum=0.0, multi_precision=False, warmup_strategy="linear",
                 warmup_epochs=5, batch_scale=1, updates_per_epoch=32, begin_epoch=0,
                 num_epochs=60, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.multi_precision = multi_precision
        self.warmup_strategy = warmup_strategy
        self.warmup_epochs = warmup_epochs
        self.batch_scale = batch_scale
        self.updates_per_epoch = updates_per_epoch
        self.init_updates = begin_epoch * updates_per_epoch
        self.num_epochs = num_epochs
        self.lbmult = 1
        self.cumgrads = {}
        self.adaptive = False
        self.admult = 1

    def create_state(self, index, weight):
        if self.multi_precision and weight.dtype == numpy.float16:
            weight32 = nd.array(weight, ctx=weight.context, dtype=numpy.float32)
            mom = None if self.momentum == 0.0 else nd.zeros(
                weight.shape, weight.context, dtype=numpy.float32, stype=weight.stype)
            return (mom, weight32)
        if self.momentum == 0.0:
            return None
        return nd.zeros(weight.shape, weight.context, dtype=weight.dtype, stype=weight.stype)

    def _get_lbmult(self, nup):
        nwup = self.warmup_epochs * self.updates_per_epoch
        maxmult = float(self.batch_scale)
        if nup >= nwup:
            return maxmult
        if nwup <= 1:
            return 1.0
        ramp = {"linear": lambda: nup / nwup,
                "power2": lambda: (nup * nup) / (nwup * nwup),
                "sqrt": lambda: math.sqrt(float(nup) / nwup)}.get(self.warmup_strategy)
        return 1.0 if ramp is None else 1.0 + (maxmult - 1) * ramp()

    def _get_lars(self, weight, grad, wd):
        weight2 = nd.multiply(weight, weight).asnumpy().sum()
        grad2 = nd.multiply(grad, grad).asnumpy().sum()
        lars = math.sqrt(weight2 / (grad2 + wd * weight2 + 1e-18))
        return min(max(lars, 0.01), 100)

    def _cumulate_gradient(self, grad, index):
        old = self.cumgrads.get(index)
        if old and old["num_cums"] > 0:
            cgrad = {"cum_grad": old["cum_grad"] + grad, "num_cums": old["num_cums"] + 1}
        else:
            cgrad = {"cum_grad": grad, "num_cums": self.init_updates + 1}
        self.cumgrads[index] = cgrad
        return cgrad

    def update(self, index, weight, grad, state):
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        self._update_count(index)
        cgrad = self._cumulate_gradient(grad, index)
        if cgrad["num_cums"] % self.batch_scale != 0:
            nd.sgd_update(weight, grad, out=weight, lr=0.0, wd=wd)
            return
        grad = cgrad["cum_grad"] / self.batch_scale
        if self.warmup_strategy == "lars":
            lr *= self._get_lars(weight, grad, wd)
        else:
            lr *= self._get_lbmult(cgrad["num_cums"])
        sgd_one(self, weight, grad, state, lr, wd, _sgd_kwargs(self, self.momentum),
                isinstance(state, (list, tuple)))
        self.cumgrads[index]["cum_grad"] = 0
