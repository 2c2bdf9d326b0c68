"""Optimizers as JSON (no pickle), for the KVStore servers and state files.

``to_json(opt)`` writes ``{"optimizer": registered name, "params": every
constructor parameter, "lr_mult": [[key, value], ...], "wd_mult": [...],
"idx2name": [[index, name], ...]}``; multipliers and idx2name are pairs so
int and str keys survive.  The lr_scheduler is ``{"class": ..., "params":
...}``.  ``sym`` and ``param_dict`` are not written: a symbol's multipliers
are already in lr_mult/wd_mult, and param_dict is the trainer's to set."""
import json
import numbers

from mx import lr_scheduler as _lr_scheduler
from mx._arguments import constructor_parameters
from mx.optimizer.optimizer import Optimizer

_NOT_WRITTEN = ("sym", "param_dict", "param_idx2name", "lr_scheduler", "learning_rate")
# Constructor parameters stored under another attribute name.
_CURRENT = {"learning_rate": "lr"}


def _registered_name(opt):
    for name, klass in Optimizer.opt_registry.items():
        if klass is type(opt):
            return name
    raise ValueError(f"to_json: {type(opt).__name__} is not a registered optimizer "
                     f"(decorate it with mx.optimizer.Optimizer.register)")


def _plain(value, where):
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v, where) for v in value]
    raise TypeError(f"to_json: {where} is a {type(value).__name__}, which JSON cannot hold")


def _pairs(mapping, where):
    return [[_plain(k, where), _plain(v, where)] for k, v in mapping.items()]


def to_dict(opt):
    """The dict ``to_json`` writes."""
    params = constructor_parameters(type(opt))
    params.update(opt._arguments)
    out = {}
    for name, value in params.items():
        if name in _NOT_WRITTEN:
            continue
        # Attributes of the parameter's name hold the current value (a
        # Trainer may have changed rescale_grad since construction).
        if name in opt.__dict__ and not callable(opt.__dict__[name]):
            value = opt.__dict__[name]
        out[name] = _plain(value, f"parameter {name!r}")
    out["learning_rate"] = _plain(opt.lr, "learning_rate")
    sched = opt.lr_scheduler
    return {"optimizer": _registered_name(opt), "params": out,
            "lr_scheduler": None if sched is None else sched.to_dict(),
            "lr_mult": _pairs(opt.lr_mult, "lr_mult"),
            "wd_mult": _pairs(opt.wd_mult, "wd_mult"),
            "idx2name": _pairs(opt.idx2name, "idx2name")}


def to_json(opt):
    """``opt`` as a JSON string; see the module's docstring."""
    return json.dumps(to_dict(opt), sort_keys=True)


_KEYS = {"optimizer", "params", "lr_scheduler", "lr_mult", "wd_mult", "idx2name"}


def from_dict(spec):
    """The optimizer ``to_dict`` described."""
    if not isinstance(spec, dict) or set(spec) != _KEYS:
        got = sorted(spec) if isinstance(spec, dict) else type(spec).__name__
        raise ValueError(f"from_json: expected an object with keys {sorted(_KEYS)}, got {got}")
    name = spec["optimizer"]
    klass = Optimizer.opt_registry.get(str(name).lower())
    if klass is None:
        raise ValueError(f"from_json: unknown optimizer {name!r}; registered: "
                         f"{sorted(Optimizer.opt_registry)}")
    known = set(constructor_parameters(klass)) - {"sym", "param_dict"}
    unknown = sorted(set(spec["params"]) - known)
    if unknown:
        raise ValueError(f"from_json: optimizer {name!r} has no parameter(s) {unknown}; "
                         f"known: {sorted(known)}")
    kwargs = dict(spec["params"])
    if spec["lr_scheduler"] is not None:
        kwargs["lr_scheduler"] = _lr_scheduler.from_dict(spec["lr_scheduler"])
    kwargs["param_idx2name"] = {k: v for k, v in spec["idx2name"]}
    opt = klass(**kwargs)
    opt.lr_mult = {k: v for k, v in spec["lr_mult"]}
    opt.wd_mult = {k: v for k, v in spec["wd_mult"]}
    return opt


def from_json(text):
    """The optimizer that ``Optimizer.to_json`` wrote; unknown optimizer
    names or parameters are refused, naming them."""
    try:
        spec = json.loads(text)
    except (TypeError, ValueError) as err:
        raise ValueError(f"from_json: not a JSON optimizer description: {err}") from None
    return from_dict(spec)
