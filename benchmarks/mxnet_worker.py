"""MXNet 1.9.1 (from PyPI, in its own virtual environment: it needs
numpy<1.24) as a reference for the graph benchmarks, run as a
benchmarks/net_worker.py subprocess.

The interpreter is $MX_MXNET_PYTHON, else /tmp/mxnet-venv/bin/python;
when it is missing the comparison goes on without MXNet.

    worker = MXNetWorker.start(threads=2)        # None when MXNet is absent
"""
import os

from benchmarks.net_worker import NetWorker

MXNET_PYTHON = os.environ.get("MX_MXNET_PYTHON", "/tmp/mxnet-venv/bin/python")


def mxnet_env(threads):
    """MXNet's environment for ``threads`` threads per operator.

    MXNet's CPU engine runs one worker thread (MXNET_CPU_WORKER_NTHREADS
    defaults to 1) and parallelises inside each operator with OpenMP
    (its kernels and oneDNN) and OpenBLAS, all of which read these
    variables; the engine's default is kept, as MXNet's users run it.
    The PyPI wheel's OpenBLAS mis-detects this machine's CPU without
    OPENBLAS_CORETYPE.
    """
    env = dict(os.environ)
    env.setdefault("OPENBLAS_CORETYPE", "Haswell")
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = str(threads)
    # One bind log line per executor on stderr ("Subgraph backend MKLDNN is
    # activated") is all MXNet prints; keep its warnings off the table.
    env.setdefault("MXNET_SUBGRAPH_VERBOSE", "0")
    return env


class MXNetWorker(NetWorker):
    """MXNet's training worker (NetWorker's requests)."""

    @classmethod
    def start(cls, threads, python=None):
        """The MXNet worker on ``threads`` threads, or None (with the reason
        printed) when MXNet's interpreter is missing or does not start."""
        python = MXNET_PYTHON if python is None else python
        return super().start("mxnet", python, threads, env=mxnet_env(threads))
