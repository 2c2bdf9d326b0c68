"""dist_sync on this machine: 2 workers + 1 server, 16 MB of float32 per
iteration pushed and pulled, as GB/s allreduce-equivalent (16 MB per
iteration time), through shared memory and through MPI messages
(MXNET_KVSTORE_SHM=0), the shared-memory rows with the workers summing
(the default for keys of 4 MiB and more) and with the server summing,
next to a raw mpi4py Allreduce of the same bytes over 2
ranks in the same run (the MPI floor the server design is measured
against; target: ours >= 0.8x it).

    MX_MXNET_PYTHON=/tmp/mxnet-venv/bin/python \
        .venv/bin/python benchmarks/compare_kvstore_dist.py [--iters N] [--rounds R] [--nbytes B]

``--nbytes 4096`` measures the fixed cost per operation instead (thread
wake-ups, headers, the engine) against the same raw rows.

MXNet 1.9.1's dist_sync (ps-lite over ZeroMQ) runs the same loop when
MX_MXNET_PYTHON names its interpreter: the scheduler, server and worker
roles are started by hand with DMLC_ROLE / DMLC_PS_ROOT_URI /
DMLC_PS_ROOT_PORT (tools/launch.py is not in the wheel), OPENBLAS_CORETYPE
=Haswell.
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap

from mx_kvstore._dist_wire import CHUNK_BYTES

NBYTES = 16 * 1024 * 1024

_RAW = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    iters = int(sys.argv[1])
    a = np.ones({n} // 4, np.float32); b = np.empty_like(a)
    for _ in range(3):
        comm.Allreduce(a, b)
    comm.Barrier()
    t = time.perf_counter()
    for _ in range(iters):
        comm.Allreduce(a, b)
    dt = (time.perf_counter() - t) / iters
    assert b[0] == comm.Get_size()
    if comm.Get_rank() == 0:
        print("RESULT " + json.dumps({{"seconds": dt}}))
""")

# The server design with nothing of mx in it: 2 workers each send 16 MB to
# rank 2 and receive the sum, in chunks of mx's size the server sums and answers
# while the next arrive (what mx's server does, minus Python and the engine).
_RAW_SERVER = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    from mpi4py import MPI
    comm, iters = MPI.COMM_WORLD, int(sys.argv[1])
    rank, n, m = comm.Get_rank(), {n} // 4, {chunk} // 4
    if rank < 2:
        g = np.ones(n, np.float32); out = np.empty_like(g)
    else:
        bufs = [np.empty(n, np.float32) for _ in range(2)]
    def step():
        parts = [slice(k, min(k + m, n)) for k in range(0, n, m)]
        if rank < 2:
            reqs = []
            for k, s in enumerate(parts):
                reqs.append(comm.Irecv(out[s], source=2, tag=1000 + k))
                reqs.append(comm.Isend(g[s], dest=2, tag=k))
            MPI.Request.Waitall(reqs)
            return
        recvs = [[comm.Irecv(bufs[w][s], source=w, tag=k) for k, s in enumerate(parts)]
                 for w in range(2)]
        sends = []
        for k, s in enumerate(parts):
            recvs[0][k].Wait(); recvs[1][k].Wait()
            np.add(bufs[0][s], bufs[1][s], out=bufs[0][s])
            sends += [comm.Isend(bufs[0][s], dest=w, tag=1000 + k) for w in range(2)]
        MPI.Request.Waitall(sends)
    for _ in range(3):
        step()
    comm.Barrier()
    t = time.perf_counter()
    for _ in range(iters):
        step()
    dt = (time.perf_counter() - t) / iters
    if rank == 0:
        assert out[0] == 2
        print("RESULT " + json.dumps({{"seconds": dt}}))
""")

_OURS = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    import mx
    kv = mx.kv.create("{kind}")
    iters, mode = int(sys.argv[1]), sys.argv[2]
    grad = mx.nd.ones(({n} // 4,))
    out = mx.nd.zeros(({n} // 4,))
    kv.init(0, out)
    def step():
        if mode == "pushpull":
            kv.pushpull(0, grad, out=out)
        else:
            kv.push(0, grad)
            kv.pull(0, out=out)
        out.wait_to_read()
    for _ in range(3):
        step()
    kv._barrier()
    t = time.perf_counter()
    for _ in range(iters):
        step()
    dt = (time.perf_counter() - t) / iters
    # MXNet 1.9.1 pulls a key into its last pushed CPU array (the worker's
    # comm buffer aliases it), so there grad doubles each round: not checked.
    if mx.__name__ != "mxnet":
        assert out.asnumpy()[0] == kv.num_workers, out.asnumpy()[:4]
    # the data path key 0 took (mx: shared memory with a server on this
    # host unless MXNET_KVSTORE_SHM=0)
    if mx.__name__ == "mxnet":
        path = "ps-lite"
    else:
        path = "shm" if kv._keys[0].shared[0] is not None else "messages"
    if kv.rank == 0:
        print("RESULT " + json.dumps({{"seconds": dt, "path": path}}))
""")


def _run(cmd, env=None, path=None):
    """The seconds per iteration a RESULT line gives; with ``path``, the
    data path the run reports must be that one."""
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, **(env or {})))
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            result = json.loads(line[7:])
            if path is not None and result["path"] != path:
                raise RuntimeError(f"{cmd} took the {result['path']} path, not {path}")
            return result["seconds"]
    raise RuntimeError(f"{cmd} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")


def _free_port():
    """A TCP port nobody listens on now (another job running this benchmark
    at once took a fixed one, and ps-lite then waited forever)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_mxnet(python, script, args, port=None):
    """MXNet's ps-lite roles on 127.0.0.1: scheduler, 1 server, 2 workers."""
    port = _free_port() if port is None else port
    with tempfile.TemporaryDirectory() as shim:
        with open(os.path.join(shim, "mx.py"), "w") as f:
            f.write("import sys, mxnet\nsys.modules['mx'] = mxnet\n")
        env = dict(os.environ, DMLC_PS_ROOT_URI="127.0.0.1", DMLC_PS_ROOT_PORT=str(port),
                   DMLC_NUM_SERVER="1", DMLC_NUM_WORKER="2", OPENBLAS_CORETYPE="Haswell",
                   PYTHONPATH=shim)
        procs = [subprocess.Popen([python, script] + args, env=dict(env, DMLC_ROLE=role),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for role in ("scheduler", "server", "worker", "worker")]
        try:
            outs = [p.communicate(timeout=300) for p in procs]
        finally:        # a hung job must not outlive the run
            for p in procs:
                if p.poll() is None:
                    p.kill()
    for p, (out, err) in zip(procs, outs):
        if p.returncode != 0:
            raise RuntimeError(f"MXNet {script} failed ({p.returncode}):\n{out}\n{err}")
    for out, _ in outs:
        for line in out.splitlines():
            if line.startswith("RESULT "):
                return json.loads(line[7:])["seconds"]
    raise RuntimeError("MXNet printed no RESULT")


def _cases(tmp, nbytes, iters):
    """(name, run) for every row, the raw Allreduce first."""
    from mx_kvstore._dist_mpi import find_mpiexec
    mpiexec = find_mpiexec()
    paths = {}
    for name, text in (("raw", _RAW.format(n=nbytes)),
                       ("raw_server", _RAW_SERVER.format(n=nbytes, chunk=CHUNK_BYTES)),
                       ("ours", _OURS.format(n=nbytes, kind="dist_sync"))):
        paths[name] = os.path.join(tmp, name + ".py")
        with open(paths[name], "w") as f:
            f.write(text)
    n = str(iters)
    cases = [("raw mpi4py Allreduce, 2 ranks",
              lambda: _run([mpiexec, "-n", "2", sys.executable, paths["raw"], n])),
             ("raw mpi4py server, 2 workers + 1 server",
              lambda: _run([mpiexec, "-n", "3", sys.executable, paths["raw_server"], n]))]
    # MXNET_KVSTORE_SHM=1: through shared memory (every rank is on this
    # host; forced below its default 4 MiB with _MIN_BYTES=0), the workers
    # summing keys of at least MXNET_KVSTORE_SHM_REDUCE_BYTES (4 MiB), or the
    # server summing every key; 0: MPI messages, the path of ranks on
    # different hosts (and by default of keys under 4 MiB)
    shm = {"MXNET_KVSTORE_SHM": "1", "MXNET_KVSTORE_SHM_MIN_BYTES": "0"}
    for label, env, path in (("shm", shm, "shm"),
                             ("shm, server sums",
                              dict(shm, MXNET_KVSTORE_SHM_REDUCE_BYTES=str(1 << 40)), "shm"),
                             ("messages", {"MXNET_KVSTORE_SHM": "0"}, "messages")):
        for mode in ("push+pull", "pushpull"):
            cases.append((f"mx dist_sync {mode}, {label}",
                          lambda mode=mode, env=env, path=path: _run(
                              [sys.executable, "-m", "mx_kvstore.launch", "-n", "2", "-s", "1",
                               sys.executable, paths["ours"], n, mode],
                              env=env, path=path)))
    mxnet = os.environ.get("MX_MXNET_PYTHON")
    if mxnet and os.path.exists(mxnet):
        for mode in ("push+pull", "pushpull"):
            cases.append((f"MXNet 1.9.1 ps-lite {mode}, 2 workers + 1 server",
                          lambda mode=mode: _run_mxnet(mxnet, paths["ours"], [n, mode])))
    return cases


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3,
                        help="every case runs once per round, the rounds one after another "
                             "(the machine's load moves); the table gives each case's median")
    parser.add_argument("--nbytes", type=int, default=NBYTES,
                        help="bytes per iteration, a multiple of 4 (default 16 MiB; "
                             "4096 shows the fixed cost per operation)")
    args = parser.parse_args()
    if args.nbytes < 4 or args.nbytes % 4:
        parser.error(f"--nbytes {args.nbytes}: must be a positive multiple of 4")
    if args.rounds < 1 or args.iters < 1:
        parser.error("--rounds and --iters must be at least 1")
    nbytes = args.nbytes
    load_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        cases = _cases(tmp, nbytes, args.iters)
        times = {name: [] for name, _ in cases}
        for _ in range(args.rounds):
            for name, run in cases:
                times[name].append(run())
    load_end = os.getloadavg()[0]
    raw = times[cases[0][0]]
    print(f"{nbytes} bytes per iteration, {args.iters} iterations, {args.rounds} rounds; "
          f"load average {load_start:.1f} at the start, {load_end:.1f} at the end")
    print("GB/s allreduce-equivalent (bytes / time per iteration); medians over the rounds; "
          "x raw MPI per round: against the Allreduce of the same round")
    for name, _ in cases:
        t = statistics.median(times[name])
        per_round = " ".join(f"{r / x:.2f}" for r, x in zip(raw, times[name]))
        print(f"{name:50s} {t * 1e3:8.2f} ms {nbytes / t / 1e9:6.2f} GB/s "
              f"{statistics.median(raw) / t:5.2f}x raw MPI  (per round: {per_round})")
    if not any(name.startswith("MXNet") for name, _ in cases):
        print("MXNet 1.9.1 ps-lite: skipped (set MX_MXNET_PYTHON)")


if __name__ == "__main__":
    main()
