"""Finding and starting MPI: mpiexec (MPICH's wheel puts it next to the
interpreter, not on PATH), mpi4py, and this job's roles.

Roles: a job started by ``python -m mx_kvstore.launch -n W -s S`` has W+S
ranks, workers first; ``DMLC_NUM_WORKER`` / ``DMLC_NUM_SERVER`` say how many
of each, and a process's own ``DMLC_ROLE`` ('worker' or 'server'), where set,
overrides its place (an MPMD ``mpiexec ... : ...`` line).
"""
import os
import pathlib
import shutil
import sys

from mx_engine.base import MXNetError

_MPI_ENV = ("PMI_RANK", "PMI_FD", "PMI_PORT", "PMIX_RANK", "OMPI_COMM_WORLD_RANK",
            "MPI_LOCALRANKID", "HYDI_CONTROL_FD")


def find_mpiexec():
    """The mpiexec beside this interpreter (the mpich wheel's), else on PATH,
    else None."""
    here = pathlib.Path(sys.executable).parent / "mpiexec"
    if here.is_file() and os.access(here, os.X_OK):
        return str(here)
    return shutil.which("mpiexec")


def under_mpiexec():
    return any(name in os.environ for name in _MPI_ENV)


def env_int(name, default=None, minimum=0, unit=""):
    """The integer environment variable ``name`` (``default`` when unset or
    empty), at least ``minimum``; a clear error otherwise."""
    text = os.environ.get(name)
    if text is None or text == "":
        return default
    try:
        value = int(text)
    except ValueError:
        raise MXNetError(f"{name}={text!r}: expected an integer >= {minimum}{unit}") from None
    if value < minimum:
        raise MXNetError(f"{name}={value}: must be >= {minimum}{unit}")
    return value


def wants_distributed():
    """Whether this process belongs to a distributed job (MXNet's
    environment says so and mpiexec started it)."""
    return under_mpiexec() and (os.environ.get("DMLC_NUM_SERVER") is not None
                                or os.environ.get("DMLC_ROLE") is not None)


def mpi():
    """mpi4py's MPI module, initialised with thread support (the transport
    thread and the engine's threads both call MPI)."""
    try:
        import mpi4py
    except ImportError as exc:
        raise MXNetError("the distributed kvstore needs mpi4py and an MPI "
                         "(pip install mpi4py mpich)") from exc
    mpi4py.rc.threads = True
    mpi4py.rc.thread_level = "multiple"
    from mpi4py import MPI
    if MPI.Query_thread() < MPI.THREAD_MULTIPLE:
        raise MXNetError(f"the distributed kvstore needs MPI_THREAD_MULTIPLE; "
                         f"{MPI.Get_library_version().splitlines()[0]} gave level "
                         f"{MPI.Query_thread()}")
    return MPI


class Layout:
    """Which MPI ranks are workers and which servers, agreed by all ranks."""

    def __init__(self, MPI, comm):
        import numpy as np
        size = comm.Get_size()
        num_servers = env_int("DMLC_NUM_SERVER")
        num_workers = env_int("DMLC_NUM_WORKER")
        if num_servers is None:
            num_servers = 0
        if num_workers is None:
            num_workers = size - num_servers
        if num_workers + num_servers != size:
            raise MXNetError(f"DMLC_NUM_WORKER={num_workers} + DMLC_NUM_SERVER={num_servers} "
                             f"!= {size} MPI ranks in this job")
        role = os.environ.get("DMLC_ROLE")
        if role not in (None, "worker", "server"):
            raise MXNetError(f"DMLC_ROLE={role!r}: expected 'worker' or 'server' "
                             "(the MPI store needs no scheduler)")
        mine = np.array([{None: -1, "worker": 0, "server": 1}[role]], np.int64)
        roles = np.empty(size, np.int64)
        comm.Allgather(mine, roles)
        if (roles < 0).all():
            roles[:] = [0] * num_workers + [1] * num_servers
        elif (roles < 0).any():
            raise MXNetError("DMLC_ROLE is set on some ranks and not on others: ranks "
                             f"{[int(r) for r in np.flatnonzero(roles < 0)]} have none")
        self.workers = [int(r) for r in np.flatnonzero(roles == 0)]
        self.servers = [int(r) for r in np.flatnonzero(roles == 1)]
        if len(self.servers) != num_servers or len(self.workers) != num_workers:
            raise MXNetError(f"DMLC_ROLE gives {len(self.workers)} workers and "
                             f"{len(self.servers)} servers; DMLC_NUM_WORKER={num_workers}, "
                             f"DMLC_NUM_SERVER={num_servers}")
        self.rank = comm.Get_rank()
        self.is_server = self.rank in self.servers
        self.same_host = _same_host_ranks(MPI, comm)

    def shares_host(self, rank):
        """Whether ``rank`` runs on this rank's host (MPI's shared-memory
        domain): the dist_sync data may go through shared memory."""
        return rank in self.same_host

    @property
    def num_workers(self):
        return len(self.workers)

    @property
    def num_servers(self):
        return len(self.servers)

    def describe(self, rank):
        """'worker 1 (MPI rank 1)' / 'server 0 (MPI rank 2)'."""
        if rank in self.workers:
            return f"worker {self.workers.index(rank)} (MPI rank {rank})"
        if rank in self.servers:
            return f"server {self.servers.index(rank)} (MPI rank {rank})"
        return f"MPI rank {rank}"


def _same_host_ranks(MPI, comm):
    """The ranks of ``comm`` that can share memory with this one (collective)."""
    local = comm.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        return frozenset(MPI.Group.Translate_ranks(local.Get_group(), list(range(local.Get_size())),
                                                   comm.Get_group()))
    finally:
        local.Free()
