"""``mx.model``: checkpoints (``prefix-symbol.json`` + ``prefix-%04d.params``)
and the parameter tuple batch callbacks receive, as in MXNet 1.9.1.

The files are MXNet 1.9.1's formats: a checkpoint either library wrote
loads in the other, and saving what was loaded writes the same bytes.
"""
import logging
import os
from collections import namedtuple

from mx import ndarray
from mx import symbol as _symbol
from mx_engine import cpu

__all__ = ["BatchEndParam", "save_checkpoint", "load_checkpoint", "load_params"]

BatchEndParam = namedtuple("BatchEndParams", ["epoch", "nbatch", "eval_metric", "locals"])
BatchEndParam.__doc__ = """What ``fit`` hands to batch-end and eval-end callbacks.

``epoch`` and ``nbatch`` count from 0; ``eval_metric`` is the EvalMetric
being updated (training metric for batch_end_callback, the validation
metric for eval_end_callback); ``locals`` is the caller's ``locals()``."""


def _params_name(prefix, epoch):
    return "%s-%04d.params" % (prefix, epoch)


def save_checkpoint(prefix, epoch, symbol, arg_params, aux_params, remove_amp_cast=True):
    """Writes ``prefix-symbol.json`` (when ``symbol`` is not None) and
    ``prefix-%04d.params`` with the parameters as ``arg:name``/``aux:name``,
    copied to the CPU.

    Parameters
    ----------
    prefix : str
        Path prefix of the files.
    epoch : int
        The epoch number in the params file name.
    symbol : Symbol or None
        The network.
    arg_params, aux_params : dict of str to NDArray
        The weights and the auxiliary states.
    remove_amp_cast : bool, default True
        MXNet drops ``amp_cast``/``amp_multicast`` nodes here; no such
        operator exists in mx, so a graph holds none and the flag changes
        nothing.
    """
    del remove_amp_cast     # no AMP cast operators exist here (see the docstring)
    for what, params in (("arg_params", arg_params), ("aux_params", aux_params)):
        if not isinstance(params, dict):
            raise TypeError(f"save_checkpoint: '{what}' must be a dict of str to NDArray, "
                            f"got {type(params).__name__}")
    if symbol is not None:
        symbol.save("%s-symbol.json" % prefix)
    host = cpu()
    save_dict = {"arg:%s" % k: v.as_in_context(host) for k, v in arg_params.items()}
    save_dict.update({"aux:%s" % k: v.as_in_context(host) for k, v in aux_params.items()})
    param_name = _params_name(prefix, epoch)
    ndarray.save(param_name, save_dict)
    logging.info('Saved checkpoint to "%s"', param_name)


def load_params(prefix, epoch):
    """``(arg_params, aux_params)`` from ``prefix-%04d.params``."""
    fname = _params_name(prefix, epoch)
    if not os.path.exists(fname):
        raise FileNotFoundError(f"load_params: no parameter file {fname!r} "
                                f"(prefix={prefix!r}, epoch={epoch})")
    save_dict = ndarray.load(fname)
    arg_params, aux_params = {}, {}
    if not save_dict:
        logging.warning("Params file '%s' is empty", fname)
        return arg_params, aux_params
    if not isinstance(save_dict, dict):
        raise ValueError(f"load_params: {fname!r} holds unnamed arrays; a checkpoint names "
                         "each one 'arg:<name>' or 'aux:<name>'")
    for key, value in save_dict.items():
        kind, sep, name = key.partition(":")
        if not sep:
            raise ValueError(f"load_params: {fname!r} has an array named {key!r}; a "
                             "checkpoint names each one 'arg:<name>' or 'aux:<name>'")
        if kind == "arg":
            arg_params[name] = value
        elif kind == "aux":
            aux_params[name] = value
    return arg_params, aux_params


def load_checkpoint(prefix, epoch):
    """``(symbol, arg_params, aux_params)`` from ``prefix-symbol.json`` and
    ``prefix-%04d.params``."""
    fname = "%s-symbol.json" % prefix
    if not os.path.exists(fname):
        raise FileNotFoundError(f"load_checkpoint: no symbol file {fname!r} (prefix={prefix!r})")
    sym = _symbol.load(fname)
    arg_params, aux_params = load_params(prefix, epoch)
    return sym, arg_params, aux_params
