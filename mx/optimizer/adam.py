"""Moment-based optimizers: Adam, Adamax, Nadam, FTML and LAMB.

Adam calls ``adam_update`` (bias correction folded into the rate, as
MXNet does), FTML ``ftml_update``, LAMB ``lamb_update_phase1/2`` (and
``multi_lamb_update`` for the Updater's aggregated lists, ``mp_*`` forms for
float16 with multi_precision); Adamax and Nadam are NDArray expressions, as
in MXNet."""
import math
import os

from mx import ndarray as nd
from mx.optimizer.optimizer import Optimizer, register
from mx.optimizer.sgd import MultiPrecisionDispatch


def _two_zeros(weight, dtype=None, stype="default"):
    return tuple(nd.zeros(weight.shape, weight.context, dtype=dtype or weight.dtype,
                          stype=stype) for _ in range(2))


@register
class Adam(Optimizer):
    """Adam (Kingma & Ba): state (mean, var); the rate at step t is
    ``lr * sqrt(1 - beta2^t) / (1 - beta1^t)``."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 lazy_update=True, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.lazy_update = lazy_update

    def create_state(self, index, weight):
        return _two_zeros(weight, stype=weight.stype if self.lazy_update else "default")

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        t = self._index_update_count[index]
        lr *= math.sqrt(1. - self.beta2 ** t) / (1. - self.beta1 ** t)
        kwargs = {"beta1": self.beta1, "beta2": self.beta2, "epsilon": self.epsilon,
                  "rescale_grad": self.rescale_grad}
        if self.clip_gradient:
            kwargs["clip_gradient"] = self.clip_gradient
        mean, var = state
        nd.adam_update(weight, grad, mean, var, out=weight, lazy_update=self.lazy_update, lr=lr,
                       wd=wd, **kwargs)


def _decayed_clipped(opt, grad, weight, wd):
    grad = grad * opt.rescale_grad + wd * weight
    if opt.clip_gradient is not None:
        grad = nd.clip(grad, -opt.clip_gradient, opt.clip_gradient)
    return grad


@register
class Adamax(Optimizer):
    """AdaMax, Adam's infinity-norm variant: ``m = b1 m + (1 - b1) g``,
    ``u = max(b2 u, |g|)``, ``w -= lr / (1 - b1^t) * m / u``."""

    def __init__(self, learning_rate=0.002, beta1=0.9, beta2=0.999, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2

    def create_state(self, index, weight):
        return _two_zeros(weight)

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        t = self._index_update_count[index]
        lr /= (1. - self.beta1 ** t)
        grad = _decayed_clipped(self, grad, weight, wd)
        m_t, u_t = state
        m_t[:] *= self.beta1
        m_t[:] += (1. - self.beta1) * grad
        u_t[:] = nd.maximum(self.beta2 * u_t, nd.abs(grad))
        weight[:] -= lr * m_t / u_t


@register
class Nadam(Optimizer):
    """Nesterov Adam (Dozat) with the momentum schedule
    ``beta1 * (1 - 0.5 * 0.96 ** (t * schedule_decay))``."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 schedule_decay=0.004, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.schedule_decay = schedule_decay
        self.m_schedule = 1.

    def create_state(self, index, weight):
        return _two_zeros(weight)

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        t = self._index_update_count[index]
        grad = _decayed_clipped(self, grad, weight, wd)
        momentum_t = self.beta1 * (1. - 0.5 * pow(0.96, t * self.schedule_decay))
        momentum_t_1 = self.beta1 * (1. - 0.5 * pow(0.96, (t + 1) * self.schedule_decay))
        # One product shared by every index, as MXNet keeps it.
        self.m_schedule = self.m_schedule * momentum_t
        m_schedule_next = self.m_schedule * momentum_t_1
        m_t, v_t = state
        m_t[:] *= self.beta1
        m_t[:] += (1. - self.beta1) * grad
        v_t[:] *= self.beta2
        v_t[:] += (1. - self.beta2) * grad * grad
        grad_prime = grad / (1. - self.m_schedule)
        m_t_prime = m_t / (1. - m_schedule_next)
        v_t_prime = v_t / (1. - pow(self.beta2, t))
        m_t_bar = (1. - momentum_t) * grad_prime + momentum_t_1 * m_t_prime
        weight[:] -= lr * m_t_bar / (nd.sqrt(v_t_prime) + self.epsilon)


@register
class FTML(Optimizer):
    """Follow the Moving Leader (Zheng & Kwok): state (d, v, z), one
    ``ftml_update`` per step."""

    def __init__(self, beta1=0.6, beta2=0.999, epsilon=1e-8, **kwargs):
        super().__init__(**kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon

    def create_state(self, index, weight):
        return tuple(nd.zeros(weight.shape, weight.context, dtype=weight.dtype)
                     for _ in range(3))

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        t = self._index_update_count[index]
        kwargs = {"beta1": self.beta1, "beta2": self.beta2, "epsilon": self.epsilon,
                  "rescale_grad": self.rescale_grad, "t": t}
        if self.clip_gradient:
            kwargs["clip_grad"] = self.clip_gradient
        prev_d, prev_v, prev_z = state
        nd.ftml_update(weight, grad, prev_d, prev_v, prev_z, out=weight, lr=lr, wd=wd, **kwargs)


@register
class LAMB(MultiPrecisionDispatch, Optimizer):
    """LAMB (You et al., 2019): Adam's direction scaled per layer by the
    trust ratio ``|w| / |g|`` (bounded by lower_bound/upper_bound);
    ``lamb_update_phase1``, the two norms on the device, ``lamb_update_phase2``.
    Aggregated lists (MXNET_OPTIMIZER_AGGREGATION_SIZE, at most 45) take one
    ``multi_lamb_update``/``multi_mp_lamb_update`` call."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-6,
                 lower_bound=None, upper_bound=None, bias_correction=True, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        self.bias_correction = bias_correction
        size = int(os.getenv("MXNET_OPTIMIZER_AGGREGATION_SIZE", "45"))
        self.aggregate_num = max(1, min(45, size))

    def create_state(self, index, weight):
        return _two_zeros(weight, stype=weight.stype)

    def _bounds(self):
        bounds = {}
        if self.lower_bound:
            bounds["lower_bound"] = self.lower_bound
        if self.upper_bound:
            bounds["upper_bound"] = self.upper_bound
        return bounds

    def _update_impl(self, index, weight, grad, state, multi_precision=False):
        kwargs = {"beta1": self.beta1, "beta2": self.beta2, "epsilon": self.epsilon,
                  "bias_correction": self.bias_correction, "rescale_grad": self.rescale_grad}
        if self.clip_gradient:
            kwargs["clip_gradient"] = self.clip_gradient
        if self.aggregate_num > 1 and isinstance(index, (tuple, list)):
            self._multi_update(index, weight, grad, state, kwargs, multi_precision)
            return
        if isinstance(index, (tuple, list)):
            index, weight, grad, state = index[0], weight[0], grad[0], state[0]
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        kwargs["t"] = self._index_update_count[index]
        if multi_precision:
            weight32, (mean, var) = state
            g = nd.mp_lamb_update_phase1(weight, grad, mean, var, weight32, wd=wd, **kwargs)
            nd.mp_lamb_update_phase2(weight, g, weight32.norm(), g.norm(), weight32, lr=lr,
                                     out=weight, **self._bounds())
        else:
            mean, var = state
            g = nd.lamb_update_phase1(weight, grad, mean, var, wd=wd, **kwargs)
            nd.lamb_update_phase2(weight, g, weight.norm(), g.norm(), lr=lr, out=weight,
                                  **self._bounds())

    def _multi_update(self, indices, weights, grads, states, kwargs, multi_precision):
        kwargs.update(self._bounds())
        step_count, lrs, wds = [], [], []
        for i in indices:
            self._update_count(i)
            step_count.append(self._index_update_count[i])
            lrs.append(self._get_lr(i))
            wds.append(self._get_wd(i))
        for start in range(0, len(weights), self.aggregate_num):
            part = slice(start, start + self.aggregate_num)
            common = dict(out=weights[part], step_count=step_count[part], lrs=lrs[part],
                          wds=wds[part], **kwargs)
            if multi_precision:
                weights32, moments = zip(*states[part])
                mean, var = zip(*moments)
                nd.contrib.multi_mp_lamb_update(weights[part], grads[part], mean, var,
                                                weights32, **common)
            else:
                mean, var = zip(*states[part])
                nd.contrib.multi_lamb_update(weights[part], grads[part], mean, var, **common)
