"""A distributed job's server ranks serve here, at the end of ``import mx``
(as MXNet's servers do at ``import mxnet``), once the optimizers they may
be sent are importable; see mx_kvstore._server_role."""
from mx_kvstore import _server, _server_role


def _updater_from_json(text):
    """The updater of the optimizer a worker sent as JSON (name + parameters)."""
    import mx
    optimizer = getattr(mx, "optimizer", None)
    if optimizer is None or not hasattr(optimizer, "from_json"):
        raise RuntimeError("mx.optimizer.from_json is not available in this build")
    return optimizer.get_updater(optimizer.from_json(text))


_server.updater_from_json = _updater_from_json
_server_role.join()
