"""``mx.kv`` / ``mx.kvstore``: MXNet 1.9.1's KVStore, from mx_kvstore.

mx_kvstore never imports ``mx``; this module fills its optimizer hooks
(``mx_kvstore.optimizer_hooks``) with mx.optimizer's functions, looked up
when a store first needs them, so either package may be imported first.
"""
import sys as _sys

from mx_kvstore import base, kvstore, kvstore_server, optimizer_hooks
from mx_kvstore.base import KVStoreBase, create
from mx_kvstore.kvstore import KVStore
from mx_kvstore.kvstore_server import KVStoreServer

__all__ = ["create", "KVStore", "KVStoreBase", "KVStoreServer"]


def _get_updater(optimizer):
    from mx import optimizer as opt
    return opt.get_updater(optimizer)


def _to_json(optimizer):
    return optimizer.to_json()


def _from_json(text):
    from mx import optimizer as opt
    return opt.from_json(text)


def _get_states(updater, dump_optimizer):
    return updater.get_states(dump_optimizer)


def _set_states(updater, data):
    return updater.set_states(data)


optimizer_hooks.register(get_updater=_get_updater, to_json=_to_json, from_json=_from_json,
                         get_states=_get_states, set_states=_set_states)

# MXNet's sub-modules: import mx.kvstore.base works as import mxnet.kvstore.base did.
_sys.modules[__name__ + ".base"] = base
_sys.modules[__name__ + ".kvstore"] = kvstore
_sys.modules[__name__ + ".kvstore_server"] = kvstore_server
