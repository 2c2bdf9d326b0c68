"""``mx.kvstore.kvstore_server`` / ``mx.kv.KVStoreServer`` (MXNet 1.9.1's
names; ``mx.kvstore_server``, where MXNet before 1.6 kept them) outside a
distributed job; the mpi-marked jobs of test_kvstore_dist_rows.py run the
controller on real server ranks."""
import importlib

import pytest

import mx
from mx.base import MXNetError


def test_the_names_are_mxnets_and_one_class():
    module = importlib.import_module("mx.kvstore.kvstore_server")
    assert module is mx.kv.kvstore_server is mx.kvstore.kvstore_server
    assert mx.kv.KVStoreServer is module.KVStoreServer
    assert importlib.import_module("mx.kvstore_server").KVStoreServer is module.KVStoreServer
    assert module.__all__ == ["KVStoreServer"]


def test_run_on_a_process_outside_a_job_is_refused_clearly():
    server = mx.kv.KVStoreServer(mx.kv.create("local"))
    assert server.kvstore.type == "local"
    with pytest.raises(MXNetError, match="KVStoreServer.run: this process is not part of a "
                                         "distributed job"):
        server.run()
