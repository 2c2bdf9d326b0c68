"""The Optimizer base class and the registry of optimizers by name
(MXNet 1.9.1's ``mxnet.optimizer.Optimizer``, ``register``, ``create``)."""
import warnings

import numpy

from mx._arguments import RecordsArguments
from mx import ndarray as nd


class Optimizer(RecordsArguments):
    """The base class inherited by all optimizers.

    Parameters
    ----------
    rescale_grad : float, default 1.0
        Multiply the gradient with ``rescale_grad`` before updating; often
        ``1.0 / batch_size``.
    param_idx2name : dict of int to str, optional
        Maps the indices ``update`` is called with to parameter names; names
        not ending in ``_weight`` or ``_gamma`` get a weight-decay multiplier
        of 0.
    wd : float, default 0.0
        The weight decay (L2 regularization) coefficient.
    clip_gradient : float, optional
        Clip the gradient to ``[-clip_gradient, clip_gradient]``.
    learning_rate : float, optional
        The learning rate; it overwrites ``lr_scheduler``'s ``base_lr`` when
        both are given, and is 0.01 when neither is.
    lr_scheduler : mx.lr_scheduler.LRScheduler, optional
        Gives the learning rate from the update count.
    sym : Symbol, optional
        Its variables' ``__lr_mult__``/``__wd_mult__`` attributes become the
        multipliers of the parameters of those names.
    begin_num_update : int, default 0
        The update count to start from.
    multi_precision : bool, default False
        Keep a float32 master copy of float16 weights and update that.
    param_dict : dict of int to Parameter, optional
        Objects with ``lr_mult``/``wd_mult`` attributes, looked up first.
    """

    opt_registry = {}

    def __init__(self, rescale_grad=1., param_idx2name=None, wd=0., clip_gradient=None,
                 learning_rate=None, lr_scheduler=None, sym=None, begin_num_update=0,
                 multi_precision=False, param_dict=None):
        self.rescale_grad = rescale_grad
        self.lr_scheduler = lr_scheduler
        if lr_scheduler is None and learning_rate is None:
            learning_rate = 0.01
        self.lr = learning_rate
        if lr_scheduler is not None and learning_rate is not None \
                and lr_scheduler.base_lr != learning_rate:
            print(UserWarning("learning rate from ``lr_scheduler`` has been overwritten by "
                              "``learning_rate`` in optimizer."))
            lr_scheduler.base_lr = learning_rate
        self.wd = wd
        self.lr_mult = {}
        self.wd_mult = {}
        self.begin_num_update = begin_num_update
        self.num_update = begin_num_update
        # Update counts per index, one table per device (Updater switches).
        self._all_index_update_counts = {0: {}}
        self._index_update_count = self._all_index_update_counts[0]
        self.clip_gradient = clip_gradient
        self.multi_precision = multi_precision
        self.aggregate_num = 0
        if param_idx2name is None:
            param_idx2name = {}
        if not isinstance(param_idx2name, dict):
            raise TypeError(f"{type(self).__name__}: param_idx2name should be a dict of param "
                            f"indexes to names, got {type(param_idx2name).__name__}")
        self.idx2name = param_idx2name.copy()
        self.sym_info = (sym.attr_dict(), sym.list_arguments()) if sym is not None else ()
        self.param_dict = param_dict if param_dict else {}
        self.allow_np_array = False
        self.set_lr_mult({})
        self.set_wd_mult({})

    # --- registry ---------------------------------------------------------------

    @staticmethod
    def register(klass):
        """Registers an optimizer class under its lower-cased name (a
        decorator); a later class of the same name overrides, with a warning.

        >>> @mx.optimizer.Optimizer.register
        ... class MyOptimizer(mx.optimizer.Optimizer):
        ...     pass
        """
        if not isinstance(klass, type):
            raise TypeError(f"Optimizer.register: expected a class, got {klass!r}")
        name = klass.__name__.lower()
        old = Optimizer.opt_registry.get(name)
        if old is not None and old is not klass:
            warnings.warn(f"WARNING: New optimizer {klass.__module__}.{klass.__name__} is "
                          f"overriding existing optimizer {old.__module__}.{old.__name__}")
        Optimizer.opt_registry[name] = klass
        return klass

    @staticmethod
    def create_optimizer(name, **kwargs):
        """An instance of the optimizer registered as ``name`` (case
        insensitive), built with ``kwargs``."""
        klass = Optimizer.opt_registry.get(str(name).lower())
        if klass is None:
            raise ValueError(f"Cannot find optimizer {name}; registered: "
                             f"{sorted(Optimizer.opt_registry)}")
        return klass(**kwargs)

    # --- learning rate and multipliers ---------------------------------------

    @property
    def learning_rate(self):
        if self.lr_scheduler is not None:
            return self.lr_scheduler(self.num_update)
        return self.lr

    def set_learning_rate(self, lr):
        """Sets the learning rate; refused when an lr_scheduler sets it."""
        if self.lr_scheduler is not None:
            raise UserWarning("LRScheduler of the optimizer has already been defined. Note "
                              "that set_learning_rate can mutate the value of the learning "
                              "rate of the optimizer only when the LRScheduler of the "
                              "optimizer is undefined.")
        self.lr = lr

    def set_lr_scale(self, args_lrscale):  # noqa: ARG002
        """[DEPRECATED] Sets lr scale. Use set_lr_mult instead."""
        raise DeprecationWarning

    def _symbol_multipliers(self, attribute):
        """{argument name: float} of the symbol's ``__lr_mult__``/``__wd_mult__``."""
        if not self.sym_info:
            return {}
        attrs, arg_names = self.sym_info
        return {n: float(attrs[n][attribute]) for n in arg_names
                if n in attrs and attribute in attrs[n]}

    def set_lr_mult(self, args_lr_mult):
        """Sets the learning-rate multipliers, by parameter name or index
        (replacing earlier ones; the symbol's ``__lr_mult__`` come first)."""
        self.lr_mult = self._symbol_multipliers("__lr_mult__")
        self.lr_mult.update(args_lr_mult)

    def _no_decay_names(self):
        """Names whose weight decay is 0 by default (MXNet: not a weight or gamma)."""
        return [n for n in self.idx2name.values()
                if not (n.endswith("_weight") or n.endswith("_gamma"))]

    def set_wd_mult(self, args_wd_mult):
        """Sets the weight-decay multipliers, by parameter name or index: 0
        for every named parameter that is not a ``_weight``/``_gamma``, then
        the symbol's ``__wd_mult__``, then ``args_wd_mult``."""
        self.wd_mult = dict.fromkeys(self._no_decay_names(), 0.0)
        self.wd_mult.update(self._symbol_multipliers("__wd_mult__"))
        self.wd_mult.update(args_wd_mult)

    def _set_current_context(self, device_id):
        """Switches to the update counts of device ``device_id``."""
        self._index_update_count = self._all_index_update_counts.setdefault(device_id, {})

    def _update_count(self, index):
        """Counts one more update of each index (an int or a list)."""
        counts = self._index_update_count
        for idx in index if isinstance(index, (list, tuple)) else [index]:
            counts[idx] = counts.get(idx, self.begin_num_update) + 1
            self.num_update = max(counts[idx], self.num_update)

    def _base_lr(self):
        return self.lr_scheduler(self.num_update) if self.lr_scheduler is not None else self.lr

    def _multiplied(self, base, indices, attribute, mults):
        values = [base] * len(indices)
        for i, index in enumerate(indices):
            if index in self.param_dict:
                values[i] *= getattr(self.param_dict[index], attribute)
            elif index in mults:
                values[i] *= mults[index]
            elif index in self.idx2name:
                values[i] *= mults.get(self.idx2name[index], 1.0)
        return values

    def _get_lrs(self, indices):
        """Learning rates of ``indices``: the scheduler's (or fixed) rate times
        each one's multiplier (param_dict, then index, then name)."""
        return self._multiplied(self._base_lr(), indices, "lr_mult", self.lr_mult)

    def _get_lr(self, index):
        return self._get_lrs([index])[0]

    def _get_wds(self, indices):
        """Weight decays of ``indices``: ``wd`` times each one's multiplier."""
        return self._multiplied(self.wd, indices, "wd_mult", self.wd_mult)

    def _get_wd(self, index):
        return self._get_wds([index])[0]

    # --- states and updates -----------------------------------------------------

    def create_state(self, index, weight):
        """The auxiliary state (momentum, moments, ...) of a weight; None here."""

    def create_state_multi_precision(self, index, weight):
        """``create_state``, and with multi_precision a float32 master copy of
        a float16 weight: ``(weight32, state)``."""
        if self.multi_precision and weight.dtype == numpy.float16:
            weight32 = weight.astype(numpy.float32)
            return (weight32, self.create_state(index, weight32))
        _warn_float16(self, weight)
        return self.create_state(index, weight)

    def update(self, index, weight, grad, state):
        """Updates ``weight`` in place from ``grad`` and ``state``."""
        raise NotImplementedError(f"{type(self).__name__} does not implement update()")

    def update_multi_precision(self, index, weight, grad, state):
        """``update``, on the float32 master copy when it has one (the weight
        is then the master copy cast back)."""
        if self.multi_precision and weight.dtype == numpy.float16:
            weight32, inner = state
            self.update(index, weight32, grad.astype(numpy.float32), inner)
            nd.cast(weight32, dtype=weight.dtype, out=weight)
        else:
            self.update(index, weight, grad, state)

    # --- JSON (mx.optimizer.serialization) ---------------------------------------

    def to_json(self):
        """This optimizer as a JSON string: its registered name, every
        constructor parameter, the lr/wd multipliers and idx2name (see
        ``mx.optimizer.from_json``)."""
        from mx.optimizer.serialization import to_json
        return to_json(self)


def _warn_float16(optimizer, weight):
    if weight.dtype == numpy.float16 and not optimizer.multi_precision:
        warnings.warn("Accumulating with float16 in optimizer can lead to poor accuracy or "
                      "slow convergence. Consider using multi_precision=True option of the "
                      f"{type(optimizer).__name__} optimizer")


def flatten_list(nested):
    """[a0, b0, a1, b1, ...] from [(a0, b0), (a1, b1), ...]."""
    return [item for group in nested for item in group]


register = Optimizer.register
create = Optimizer.create_optimizer
