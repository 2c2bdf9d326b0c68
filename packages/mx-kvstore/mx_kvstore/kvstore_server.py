"""MXNet 1.9.1's ``mxnet.kvstore.kvstore_server``: ``KVStoreServer`` and
``_init_kvstore_server_module``, on MPI ranks.

As in MXNet, a server never returns from the framework's import:
``import mx`` ends with ``_init_kvstore_server_module()``, which on a
server rank runs ``KVStoreServer().run()`` until every worker has
stopped, then ends the process; on a worker rank, or outside a job, it
returns at once.  Where ps-lite's roles do not map onto MPI ranks:

- the roles are MPI ranks (the first ``DMLC_NUM_WORKER`` are workers, or
  ``DMLC_ROLE`` per rank); there is no scheduler rank, as mpiexec starts
  and connects the job;
- a server rank has no KVStore object (``mx.kv.create('dist_...')`` is a
  worker's call), so ``KVStoreServer(kvstore)`` takes the store only for
  MXNet's signature and ``run()`` serves this rank's share of every key;
- the controller gets the worker's ``kv._send_command_to_servers(head,
  body)``: command 0 sets the servers' optimizer as MXNet's does, but from
  the optimizer's JSON (``opt.to_json()``): a server never unpickles bytes
  from the network.  Other commands are printed, as MXNet prints them.
"""
from mx_engine.base import MXNetError

from mx_kvstore import _server_role, optimizer_hooks

__all__ = ["KVStoreServer"]


class KVStoreServer:
    """The key-value store server of this MPI rank."""

    def __init__(self, kvstore=None):
        self.kvstore = kvstore
        self.handle = None              # MXNet's C handle: there is none here
        self._server = None

    def _controller(self):
        """``controller(cmd_id, cmd_body)``: what a worker's
        ``_send_command_to_servers`` does on this server."""
        def server_controller(cmd_id, cmd_body, _=None):
            if cmd_id == 0:
                optimizer = optimizer_hooks.from_json(cmd_body)
                self._server.updater = optimizer_hooks.get_updater(optimizer)
            else:
                print(f"server {self._server.index}, unknown command ({cmd_id}, {cmd_body})",
                      flush=True)
        return server_controller

    def run(self):
        """Serves until every worker has stopped; returns the exit status
        (0, or 1 after a failure).  Only a server rank of a job can."""
        job = _server_role.job_of_this_rank()
        if job is None:
            raise MXNetError("KVStoreServer.run: this process is not part of a distributed "
                             "job; start one with python -m mx_kvstore.launch -n "
                             "NUM_WORKERS -s NUM_SERVERS python script.py")
        if not job.layout.is_server:
            raise MXNetError(f"KVStoreServer.run: this process is "
                             f"{job.layout.describe(job.layout.rank)}, not a server; server "
                             f"ranks serve at import mx")
        from mx_kvstore._server import Server
        self._server = Server(job.MPI, job.comm, job.layout, _server_role.timeout())
        self._server.controller = self._controller()
        return self._server.serve()


def _init_kvstore_server_module():
    """Takes this rank's role in a distributed job (nothing outside one):
    a server rank serves with ``KVStoreServer().run()`` and never returns."""
    _server_role.join(lambda: KVStoreServer().run())
