"""How Module trains through a KVStore or locally (the private helpers of
MXNet 1.9.1's ``mxnet/model.py``: _create_kvstore, _initialize_kvstore,
_update_params_on_kvstore, _update_params)."""
import os

import numpy as np


def create_kvstore(kvstore, num_device, arg_params):
    """(kvstore or None, update_on_kvstore). One device with a non-dist
    store name trains without a store, the updater running on the worker,
    as MXNet does; a 'local' store whose largest parameter exceeds 16M
    elements updates on the worker too."""
    from mx import kv as kvs
    update_on_kvstore = bool(int(os.getenv("MXNET_UPDATE_ON_KVSTORE", "1")))
    if kvstore is None:
        kv = None
    elif isinstance(kvstore, kvs.KVStoreBase):
        kv = kvstore
    elif isinstance(kvstore, str):
        if num_device == 1 and "dist" not in kvstore:
            kv = None
        else:
            kv = kvs.create(kvstore)
            if kvstore == "local" and arg_params:
                largest = max(int(np.prod(p.shape)) for p in arg_params.values())
                if largest > 1024 * 1024 * 16:
                    update_on_kvstore = False
    else:
        raise TypeError(f"init_optimizer: kvstore must be a KVStore, a str or None, got "
                        f"{type(kvstore).__name__}")
    if kv is None:
        return None, False
    return kv, update_on_kvstore and kv.is_capable(kvs.KVStoreBase.OPTIMIZER)


def initialize_kvstore(kvstore, param_arrays, arg_params, param_names, update_on_kvstore):
    """Puts each parameter into the store; when the store updates, every
    device's copy is overwritten by the store's (a broadcast)."""
    for name, on_devices in zip(param_names, param_arrays):
        if not update_on_kvstore or arg_params[name].stype != "default":
            kvstore.init(name, arg_params[name])
        else:
            kvstore.broadcast(name, arg_params[name], out=on_devices)


def update_params_on_kvstore(param_arrays, grad_arrays, kvstore, param_names):
    """The store sums the devices' gradients, updates and hands the new
    weights back to every device."""
    for index, (weights, grads) in enumerate(zip(param_arrays, grad_arrays)):
        if grads[0] is None:
            continue
        name = param_names[index]
        if grads[0].stype == "default" and weights[0].stype == "default":
            kvstore.pushpull(name, grads, out=weights, priority=-index)
        else:
            kvstore.push(name, grads, priority=-index)
            kvstore.pull(name, out=weights, priority=-index)


def update_params(param_arrays, grad_arrays, updater, num_device, kvstore=None,
                  param_names=None):
    """Sums the gradients through the store when there is one, then runs
    the updater on each device, indices ``param_index * num_device + k``
    (MXNet's numbering, which optimizer states saved by it follow)."""
    per_device = [[] for _ in range(num_device)]
    for index, (weights, grads) in enumerate(zip(param_arrays, grad_arrays)):
        if grads[0] is None:
            continue
        if kvstore:
            name = param_names[index]
            if grads[0].stype == "default" and weights[0].stype == "default":
                kvstore.pushpull(name, grads, priority=-index)
            else:
                kvstore.push(name, grads, priority=-index)
                kvstore.pull(name, out=grads, priority=-index)
        for k, (w, g) in enumerate(zip(weights, grads)):
            per_device[k].append((index * num_device + k, g, w))
    for updates in per_device:
        if updates:
            indices, grads, weights = zip(*updates)
            updater(list(indices), list(grads), list(weights))
