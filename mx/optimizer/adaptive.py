"""Per-coordinate adaptive rates: AdaGrad, RMSProp (plain and centered),
AdaDelta and Ftrl.

RMSProp calls ``rmsprop_update``/``rmspropalex_update``, Ftrl
``ftrl_update``, AdaGrad on row_sparse gradients ``sparse.adagrad_update``;
dense AdaGrad and AdaDelta are NDArray expressions, as in MXNet.  Their
states are float32 (MXNet's ``zeros`` default), whatever the weight's dtype."""
from mx import ndarray as nd
from mx.optimizer.optimizer import Optimizer, register


def _zeros_like(weight, stype="default"):
    return nd.zeros(weight.shape, weight.context, stype=stype)


@register
class AdaGrad(Optimizer):
    """AdaGrad (Duchi et al.): ``h += g^2; w -= lr * (g / sqrt(h + eps) + wd * w)``.

    Parameters
    ----------
    eps : float, default 1e-7
        Added to the history under the square root.
    """

    def __init__(self, eps=1e-7, **kwargs):
        super().__init__(**kwargs)
        self.float_stable_eps = eps

    def create_state(self, index, weight):
        return _zeros_like(weight, weight.stype)

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        history = state
        if grad.stype == "row_sparse":
            kwargs = {"epsilon": self.float_stable_eps, "rescale_grad": self.rescale_grad}
            if self.clip_gradient:
                kwargs["clip_gradient"] = self.clip_gradient
            nd.sparse.adagrad_update(weight, grad, history, out=weight, lr=lr, wd=wd, **kwargs)
            return
        grad = grad * self.rescale_grad
        if self.clip_gradient is not None:
            grad = nd.clip(grad, -self.clip_gradient, self.clip_gradient)
        history[:] += nd.square(grad)
        div = grad / nd.sqrt(history + self.float_stable_eps)
        weight[:] += (div + weight * wd) * -lr


@register
class RMSProp(Optimizer):
    """RMSProp: Tieleman & Hinton's (state (n,)), or with ``centered=True``
    Graves's (state (n, g, delta)), weights clipped to ``clip_weights``."""

    def __init__(self, learning_rate=0.001, gamma1=0.9, gamma2=0.9, epsilon=1e-8,
                 centered=False, clip_weights=None, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.gamma1 = gamma1
        self.gamma2 = gamma2
        self.centered = centered
        self.epsilon = epsilon
        self.clip_weights = clip_weights

    def create_state(self, index, weight):
        return tuple(_zeros_like(weight, weight.stype) for _ in range(3 if self.centered else 1))

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        kwargs = {"gamma1": self.gamma1, "epsilon": self.epsilon,
                  "rescale_grad": self.rescale_grad}
        if self.centered:
            kwargs["gamma2"] = self.gamma2
        if self.clip_gradient:
            kwargs["clip_gradient"] = self.clip_gradient
        if self.clip_weights:
            kwargs["clip_weights"] = self.clip_weights
        if self.centered:
            n, g, delta = state
            nd.rmspropalex_update(weight, grad, n, g, delta, out=weight, lr=lr, wd=wd, **kwargs)
        else:
            (n,) = state
            nd.rmsprop_update(weight, grad, n, out=weight, lr=lr, wd=wd, **kwargs)


@register
class AdaDelta(Optimizer):
    """AdaDelta (Zeiler): running averages of g^2 and of the squared steps;
    no learning rate.  As in MXNet, the gradient is rescaled in place."""

    def __init__(self, rho=0.90, epsilon=1e-5, **kwargs):
        super().__init__(**kwargs)
        self.rho = rho
        self.epsilon = epsilon

    def create_state(self, index, weight):
        return (_zeros_like(weight), _zeros_like(weight))

    def update(self, index, weight, grad, state):
        wd = self._get_wd(index)
        self._update_count(index)
        grad *= self.rescale_grad
        if self.clip_gradient is not None:
            grad = nd.clip(grad, -self.clip_gradient, self.clip_gradient)
        acc_g, acc_delta = state
        acc_g[:] *= self.rho
        acc_g[:] += (1. - self.rho) * grad * grad
        delta = nd.sqrt(acc_delta + self.epsilon) / nd.sqrt(acc_g + self.epsilon) * grad
        acc_delta[:] *= self.rho
        acc_delta[:] += (1. - self.rho) * delta * delta
        weight[:] -= delta + wd * weight


@register
class Ftrl(Optimizer):
    """FTRL-Proximal (McMahan et al.): state (z, n), one ``ftrl_update``."""

    def __init__(self, lamda1=0.01, learning_rate=0.1, beta=1, **kwargs):
        super().__init__(**kwargs)
        self.lamda1 = lamda1
        self.beta = beta
        self.lr = learning_rate

    def create_state(self, index, weight):
        return (_zeros_like(weight, weight.stype), _zeros_like(weight, weight.stype))

    def update(self, index, weight, grad, state):
        self._update_count(index)
        wd, lr = self._get_wd(index), self._get_lr(index)
        kwargs = {"lamda1": self.lamda1, "beta": self.beta, "rescale_grad": self.rescale_grad}
        if self.clip_gradient:
            kwargs["clip_gradient"] = self.clip_gradient
        z, n = state
        nd.ftrl_update(weight, grad, z, n, out=weight, lr=lr, wd=wd, **kwargs)
