"""Learning-rate schedulers (MXNet 1.9.1's ``mxnet.lr_scheduler``).

A scheduler is called with the optimizer's update count and returns the
learning rate for it.  As in MXNet, the factor schedulers keep state (the
current ``base_lr`` and the last step passed) and are meant to be called
with a non-decreasing count; a call that skips ahead catches up on every
step it passed.  Every scheduler has a warm-up: for ``num_update <
warmup_steps`` the rate goes linearly from ``warmup_begin_lr`` to
``base_lr`` (``warmup_mode='linear'``) or stays at ``warmup_begin_lr``
(``'constant'``).
"""
import logging
from math import cos, pi

from mx._arguments import RecordsArguments, constructor_parameters

__all__ = ["LRScheduler", "FactorScheduler", "MultiFactorScheduler", "PolyScheduler",
           "CosineScheduler"]

_WARMUP_MODES = ("linear", "constant")


class LRScheduler(RecordsArguments):
    """Base class of the learning-rate schedulers.

    Parameters
    ----------
    base_lr : float, default 0.01
        The rate after the warm-up.
    warmup_steps : int, default 0
        How many updates the warm-up lasts.
    warmup_begin_lr : float, default 0
        The rate the warm-up starts from; at most ``base_lr``.
    warmup_mode : {'linear', 'constant'}, default 'linear'
        How the rate moves during the warm-up.
    """

    def __init__(self, base_lr=0.01, warmup_steps=0, warmup_begin_lr=0, warmup_mode="linear"):
        if not isinstance(warmup_steps, int):
            raise TypeError(f"{type(self).__name__}: warmup_steps must be an int, got "
                            f"{warmup_steps!r}")
        if warmup_begin_lr > base_lr:
            raise ValueError(f"{type(self).__name__}: Base lr has to be higher than "
                             f"warmup_begin_lr (base_lr={base_lr}, "
                             f"warmup_begin_lr={warmup_begin_lr})")
        if warmup_steps < 0:
            raise ValueError(f"{type(self).__name__}: Warmup steps has to be positive or 0, "
                             f"got {warmup_steps}")
        if warmup_mode not in _WARMUP_MODES:
            raise ValueError(f"{type(self).__name__}: Supports only linear and constant modes "
                             f"of warmup, got warmup_mode={warmup_mode!r}")
        self.base_lr = base_lr
        self.warmup_steps = warmup_steps
        self.warmup_final_lr = base_lr
        self.warmup_begin_lr = warmup_begin_lr
        self.warmup_mode = warmup_mode

    def get_warmup_lr(self, num_update):
        """The rate at update ``num_update`` (< warmup_steps) of the warm-up."""
        if not num_update < self.warmup_steps:
            raise ValueError(f"get_warmup_lr: num_update {num_update} is not in the warm-up "
                             f"(warmup_steps={self.warmup_steps})")
        if self.warmup_mode == "linear":
            fraction = float(num_update) / float(self.warmup_steps)
            return self.warmup_begin_lr + (self.warmup_final_lr - self.warmup_begin_lr) * fraction
        return self.warmup_begin_lr

    def __call__(self, num_update):
        raise NotImplementedError(f"{type(self).__name__} must override __call__(num_update)")

    def to_dict(self):
        """{'class': the class name, 'params': every constructor parameter}:
        the arguments it was built with, defaults filled in."""
        params = constructor_parameters(type(self))
        params.update(self._arguments)
        return {"class": type(self).__name__, "params": params}


class FactorScheduler(LRScheduler):
    """Multiplies the rate by ``factor`` every ``step`` updates, never below
    ``stop_factor_lr``: ``base_lr * factor ** floor((num_update - 1) / step)``."""

    def __init__(self, step, factor=1, stop_factor_lr=1e-8, base_lr=0.01, warmup_steps=0,
                 warmup_begin_lr=0, warmup_mode="linear"):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if step < 1:
            raise ValueError(f"FactorScheduler: Schedule step must be greater or equal than 1 "
                             f"round, got step={step}")
        if factor > 1.0:
            raise ValueError(f"FactorScheduler: Factor must be no more than 1 to make lr "
                             f"reduce, got factor={factor}")
        self.step = step
        self.factor = factor
        self.stop_factor_lr = stop_factor_lr
        self.count = 0

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        # MXNet's loop: one factor per full step passed since the last call.
        while num_update > self.count + self.step:
            self.count += self.step
            self.base_lr *= self.factor
            if self.base_lr < self.stop_factor_lr:
                self.base_lr = self.stop_factor_lr
                logging.info("Update[%d]: now learning rate arrived at %0.5e, will not "
                             "change in the future", num_update, self.base_lr)
            else:
                logging.info("Update[%d]: Change learning rate to %0.5e", num_update,
                             self.base_lr)
        return self.base_lr


class MultiFactorScheduler(LRScheduler):
    """Multiplies the rate by ``factor`` once the update count passes each of
    the increasing steps in ``step``."""

    def __init__(self, step, factor=1, base_lr=0.01, warmup_steps=0, warmup_begin_lr=0,
                 warmup_mode="linear"):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(step, list) or len(step) < 1:
            raise ValueError(f"MultiFactorScheduler: step must be a non-empty list of "
                             f"increasing ints, got {step!r}")
        for i, s in enumerate(step):
            if i and s <= step[i - 1]:
                raise ValueError(f"MultiFactorScheduler: Schedule step must be an increasing "
                                 f"integer list, got {step}")
            if s < 1:
                raise ValueError(f"MultiFactorScheduler: Schedule step must be greater or "
                                 f"equal than 1 round, got {s}")
        if factor > 1.0:
            raise ValueError(f"MultiFactorScheduler: Factor must be no more than 1 to make lr "
                             f"reduce, got factor={factor}")
        self.step = step
        self.cur_step_ind = 0
        self.factor = factor
        self.count = 0

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while self.cur_step_ind < len(self.step) and num_update > self.step[self.cur_step_ind]:
            self.count = self.step[self.cur_step_ind]
            self.cur_step_ind += 1
            self.base_lr *= self.factor
            logging.info("Update[%d]: Change learning rate to %0.5e", num_update, self.base_lr)
        return self.base_lr


class _DecayScheduler(LRScheduler):
    """A decay from ``base_lr`` to ``final_lr`` over ``max_update`` updates
    (the warm-up included), its shape given by ``_fraction``."""

    def __init__(self, max_update, base_lr, final_lr, warmup_steps, warmup_begin_lr,
                 warmup_mode):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(max_update, int):
            raise TypeError(f"{type(self).__name__}: max_update must be an int, got "
                            f"{max_update!r}")
        if max_update < 1:
            raise ValueError(f"{type(self).__name__}: maximum number of updates must be "
                             f"strictly positive, got {max_update}")
        self.base_lr_orig = base_lr
        self.max_update = max_update
        self.final_lr = final_lr
        self.max_steps = max_update - self.warmup_steps

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            done = num_update - self.warmup_steps
            self.base_lr = self.final_lr + (self.base_lr_orig - self.final_lr) * \
                self._fraction(done)
        return self.base_lr


class PolyScheduler(_DecayScheduler):
    """Polynomial decay: ``final_lr + (base_lr - final_lr) * (1 - (num_update -
    warmup_steps) / (max_update - warmup_steps)) ** pwr``."""

    def __init__(self, max_update, base_lr=0.01, pwr=2, final_lr=0, warmup_steps=0,
                 warmup_begin_lr=0, warmup_mode="linear"):
        super().__init__(max_update, base_lr, final_lr, warmup_steps, warmup_begin_lr,
                         warmup_mode)
        self.power = pwr

    def _fraction(self, done):
        return pow(1 - float(done) / float(self.max_steps), self.power)


class CosineScheduler(_DecayScheduler):
    """Cosine decay: ``final_lr + (base_lr - final_lr) * (1 + cos(pi * (num_update
    - warmup_steps) / (max_update - warmup_steps))) / 2``."""

    def __init__(self, max_update, base_lr=0.01, final_lr=0, warmup_steps=0, warmup_begin_lr=0,
                 warmup_mode="linear"):
        super().__init__(max_update, base_lr, final_lr, warmup_steps, warmup_begin_lr,
                         warmup_mode)

    def _fraction(self, done):
        return (1 + cos(pi * done / self.max_steps)) / 2


SCHEDULERS = {cls.__name__: cls for cls in (FactorScheduler, MultiFactorScheduler,
                                            PolyScheduler, CosineScheduler)}


def from_dict(spec):
    """The scheduler ``LRScheduler.to_dict`` described; unknown classes or
    parameters are refused, naming them."""
    if not isinstance(spec, dict) or set(spec) != {"class", "params"}:
        raise ValueError(f"lr_scheduler.from_dict: expected {{'class': ..., 'params': ...}}, "
                         f"got {spec!r}")
    cls = SCHEDULERS.get(spec["class"])
    if cls is None:
        raise ValueError(f"lr_scheduler.from_dict: unknown scheduler class {spec['class']!r}; "
                         f"known: {sorted(SCHEDULERS)}")
    unknown = sorted(set(spec["params"]) - set(constructor_parameters(cls)))
    if unknown:
        raise ValueError(f"lr_scheduler.from_dict: {spec['class']} has no parameter(s) "
                         f"{unknown}")
    return cls(**spec["params"])
