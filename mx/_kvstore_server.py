"""A distributed job's server ranks serve here, at the end of ``import mx``
(as MXNet's servers do at ``import mxnet``), once mx.kvstore has filled the
optimizer hooks a server builds its updater with; see
mx_kvstore.kvstore_server and mx_kvstore._server_role."""
from mx import kvstore_server

kvstore_server._init_kvstore_server_module()
