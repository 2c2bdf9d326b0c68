"""A reference framework's training loops (benchmarks/graph_nets.py) in its
own interpreter: MXNet 1.9.1 and PyTorch are no dependencies of this
project and each needs its own virtual environment.

The worker is a subprocess that builds each trainer once and then times
training iterations per request, so compare_graph.py can alternate ours
and the references' bursts (benchmarks.common.interleaved): on a shared
machine whose load moves from second to second, only interleaved runs
compare like with like.  Times are measured inside the worker around the
iterations alone (no pipe round trip).  Arrays travel through .npz files.

    worker = NetWorker.start("torch", "/tmp/torch-venv/bin/python", threads=2)
    worker.setup("mlp", "mlp", "/tmp/inputs-mlp.npz")    # None when absent
    seconds = worker.run("mlp", 5)                      # 5 iterations
    worker.state("mlp", 3, "/tmp/state.npz")             # outputs, 3 steps, params
    worker.close()

benchmarks/mxnet_worker.py starts MXNet's with MXNet's environment.
"""
import json
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Runs in the reference's interpreter: argv = root, framework, threads; one
# JSON request per line on stdin, one JSON reply per line on stdout.
_SERVER = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
import numpy as np
from benchmarks import graph_nets

framework, threads = sys.argv[2], int(sys.argv[3])
if framework == "torch":
    import torch as module
    module.manual_seed(0)
    module.set_num_threads(threads)
    info = {"version": module.__version__, "threads": module.get_num_threads()}
else:
    import mxnet as module
    info = {"version": module.__version__, "threads": threads}

trainers, counters = {}, {}

def reply(out):
    print(json.dumps(out), flush=True)

reply(info)
for line in sys.stdin:
    req = json.loads(line)
    try:
        key = req.get("key")
        if req["op"] == "setup":
            inputs = dict(np.load(req["inputs"]))
            t = graph_nets.trainer(framework, module, req["net"], inputs)
            trainers[key], counters[key] = t, 0
            out = {"how": getattr(t, "how", "nn.Sequential")}
        elif req["op"] == "run":
            t, times = trainers[key], []
            for _ in range(req["count"]):
                start = time.perf_counter()
                t.step(counters[key])
                times.append(time.perf_counter() - start)
                counters[key] += 1
            out = {"s": times}
        elif req["op"] == "state":
            t = trainers[key]
            state = {"outputs": t.outputs(0)}
            for i in range(req["steps"]):
                t.step(i)
            counters[key] = req["steps"]
            state.update({"param:" + k: v for k, v in t.params().items()})
            np.savez(req["path"], **state)
            out = {}
    except Exception as e:           # the parent reports it and goes on without us
        out = {"error": f"{type(e).__name__}: {e}"}
    reply(out)
"""


class WorkerError(RuntimeError):
    """The reference failed a request (its message says how)."""


def start_server(name, python, script, args, env=None):
    """(process, first reply) of ``script`` run by ``python -c`` with
    ``args``, speaking one JSON line per request and reply; None (with the
    reason printed, under ``name``) when ``python`` is missing or the
    script exits before its first reply."""
    if not python or not os.path.exists(python):
        print(f"({name}: no interpreter at {python!r}; skipped)")
        return None
    try:
        proc = subprocess.Popen([python, "-c", script, *args],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                env=env if env is not None else dict(os.environ))
        line = proc.stdout.readline()
        if not line:
            proc.wait(timeout=60)
            raise ValueError(f"it exited with status {proc.returncode}")
        return proc, json.loads(line)
    except (OSError, ValueError, subprocess.TimeoutExpired) as e:
        print(f"({name}: {python} failed to start the worker: {e}; skipped)")
        return None


class NetWorker:
    """A reference framework's subprocess answering training requests."""

    def __init__(self, proc, framework, version, threads):
        self._proc = proc
        self.framework = framework
        self.version = version
        self.threads = threads

    @classmethod
    def start(cls, framework, python, threads, env=None):
        """The worker for ``framework`` ('mxnet' or 'torch') run by
        ``python``, or None (with the reason printed) when that interpreter
        is missing or fails to start."""
        started = start_server(framework, python, _SERVER, [str(ROOT), framework, str(threads)],
                               env)
        if started is None:
            return None
        proc, info = started
        return cls(proc, framework, info["version"], info["threads"])

    def _ask(self, req):
        self._proc.stdin.write(json.dumps(req) + "\n")
        self._proc.stdin.flush()
        line = self._proc.stdout.readline()
        if not line:
            raise WorkerError(f"the {self.framework} worker exited")
        out = json.loads(line)
        if "error" in out:
            raise WorkerError(f"{self.framework}: {out['error']}")
        return out

    def setup(self, key, net, inputs_path):
        """Builds trainer ``key`` for ``net`` ('mlp' or 'lenet') from the
        arrays of graph_nets.make_inputs saved in ``inputs_path``; returns
        how it bound."""
        return self._ask({"op": "setup", "key": key, "net": net,
                          "inputs": str(inputs_path)})["how"]

    def run(self, key, count=1):
        """Seconds of each of ``count`` back-to-back training iterations."""
        return self._ask({"op": "run", "key": key, "count": int(count)})["s"]

    def state(self, key, steps, path):
        """Saves to ``path`` the outputs on batch 0, then the parameters
        after ``steps`` iterations from the trainer's current weights."""
        self._ask({"op": "state", "key": key, "steps": int(steps), "path": str(path)})

    def close(self):
        self._proc.stdin.close()
        self._proc.wait(timeout=60)
