"""PyTorch's CPU operators as a reference, run in PyTorch's own interpreter
(/tmp/torch-venv by default: PyTorch is no dependency of this project).

The worker is a subprocess that builds each case once and then times one
call per request, so a comparison script can alternate ours and PyTorch's
runs: on a shared machine whose load moves from second to second, only
interleaved runs compare like with like.  Times are measured inside the
worker around the call alone (no pipe round trip).

    worker = TorchWorker.start(threads=2)     # None when PyTorch is absent
    worker.setup("c1", "conv", shape=[64, 1, 28, 28], num_filter=20, kernel=[5, 5],
                 pad=[0, 0])
    seconds = worker.run("c1", "both", 3)     # 3 x forward + backward, all grads
    worker.close()
"""
import json
import os
import subprocess

TORCH_PYTHON = os.environ.get("MX_TORCH_PYTHON", "/tmp/torch-venv/bin/python")

# Runs in PyTorch's interpreter: one JSON request per line on stdin, one
# JSON reply per line on stdout.
_SERVER = r"""
import json, sys, time
import torch
import torch.nn.functional as F

torch.manual_seed(0)
cases = {}

def conv(shape, num_filter, kernel, pad, stride=None, **_):
    x = torch.randn(*shape, requires_grad=True)
    w = torch.randn(num_filter, shape[1], *kernel, requires_grad=True)
    b = torch.randn(num_filter, requires_grad=True)
    stride = stride or [1] * len(kernel)
    op = F.conv3d if len(kernel) == 3 else F.conv2d
    f = lambda: op(x, w, b, stride=stride, padding=pad)
    return f, (x, w, b)

def fc(m, k, n, **_):
    x = torch.randn(m, k, requires_grad=True)
    w = torch.randn(n, k, requires_grad=True)
    b = torch.randn(n, requires_grad=True)
    return (lambda: F.linear(x, w, b)), (x, w, b)

def pool(shape, kernel, stride, pool_type, **_):
    x = torch.randn(*shape, requires_grad=True)
    fn = F.max_pool2d if pool_type == "max" else F.avg_pool2d
    return (lambda: fn(x, kernel, stride)), (x,)

def softmax(shape, **_):
    x = torch.randn(*shape, requires_grad=True)
    return (lambda: torch.softmax(x, -1)), (x,)

def bn(shape, **_):
    x = torch.randn(*shape, requires_grad=True)
    g = torch.rand(shape[1]).add_(0.5).requires_grad_()
    b = torch.randn(shape[1], requires_grad=True)
    rm, rv = torch.zeros(shape[1]), torch.ones(shape[1])
    f = lambda: F.batch_norm(x, rm, rv, g, b, training=True, momentum=0.1, eps=1e-3)
    return f, (x, g, b)

def cross_entropy(shape, **_):
    x = torch.randn(*shape, requires_grad=True)
    label = torch.randint(0, shape[1], (shape[0],))
    return (lambda: F.cross_entropy(x, label, reduction="sum")), (x,)

def layer_norm(shape, **_):
    x = torch.randn(*shape, requires_grad=True)
    g = torch.rand(shape[-1]).add_(0.5).requires_grad_()
    b = torch.randn(shape[-1], requires_grad=True)
    return (lambda: F.layer_norm(x, shape[-1:], g, b, eps=1e-5)), (x, g, b)

KINDS = {"conv": conv, "fc": fc, "pool": pool, "softmax": softmax, "bn": bn,
         "cross_entropy": cross_entropy, "layer_norm": layer_norm}

graphs = {}

def once(key, f, leaves, which):
    if which == "bwd":                # backward alone, on a graph kept from one forward
        if key not in graphs:
            y = f()
            graphs[key] = (y, torch.randn(y.shape))
        y, og = graphs[key]
        t = time.perf_counter()
        torch.autograd.grad(y, leaves, og, retain_graph=True)
        return time.perf_counter() - t
    if which == "fwd":
        with torch.no_grad():
            t = time.perf_counter()
            f()
            return time.perf_counter() - t
    for a in leaves:                  # fresh gradients: no accumulation pass
        a.grad = None
    t = time.perf_counter()
    y = f()
    y.backward(y.detach())
    return time.perf_counter() - t

def run(key, which, count):
    f, leaves = cases[key]
    return [once(key, f, leaves, which) for _ in range(count)]

for line in sys.stdin:
    req = json.loads(line)
    if req["op"] == "threads":
        torch.set_num_threads(req["n"])
        out = {"threads": torch.get_num_threads(), "version": torch.__version__}
    elif req["op"] == "setup":
        cases[req["key"]] = KINDS[req["kind"]](**req["args"])
        out = {}
    else:
        out = {"s": run(req["key"], req["pass"], req.get("count", 1))}
    print(json.dumps(out), flush=True)
"""


class TorchWorker:
    """A PyTorch subprocess answering timing requests."""

    def __init__(self, proc, threads, version):
        self._proc = proc
        self.threads = threads
        self.version = version

    @classmethod
    def start(cls, threads, python=TORCH_PYTHON):
        """The worker with ``threads`` intra-op threads, or None when PyTorch's
        interpreter is missing or fails to start."""
        if not os.path.exists(python):
            return None
        env = dict(os.environ)
        env.pop("OPENBLAS_CORETYPE", None)          # PyTorch's own choice of kernels
        try:
            proc = subprocess.Popen([python, "-c", _SERVER], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, text=True, env=env)
            worker = cls(proc, threads, None)
            reply = worker._ask({"op": "threads", "n": int(threads)})
        except (OSError, ValueError, BrokenPipeError):
            return None
        worker.threads, worker.version = reply["threads"], reply["version"]
        return worker

    def _ask(self, req):
        self._proc.stdin.write(json.dumps(req) + "\n")
        self._proc.stdin.flush()
        line = self._proc.stdout.readline()
        if not line:
            raise ValueError("the PyTorch worker exited")
        return json.loads(line)

    def setup(self, key, kind, **args):
        """Builds case ``key``: kind conv, fc, pool or softmax (see _SERVER)."""
        self._ask({"op": "setup", "key": key, "kind": kind, "args": args})

    def run(self, key, which, count=1):
        """Seconds of each of ``count`` back-to-back calls of case ``key``:
        which is 'fwd' (no autograd), 'both' (forward, then backward to
        every input) or 'bwd' (the backward alone)."""
        return self._ask({"op": "run", "key": key, "pass": which, "count": count})["s"]

    def close(self):
        self._proc.stdin.close()
        self._proc.wait(timeout=60)


def start_trainer(threads, python=TORCH_PYTHON):
    """PyTorch's training loops of benchmarks/graph_nets.py in a
    benchmarks/net_worker.py subprocess on ``threads`` threads, or None
    (with the reason printed) when PyTorch's interpreter is missing."""
    from benchmarks.net_worker import NetWorker
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)          # PyTorch's own choice of kernels
    return NetWorker.start("torch", python, threads, env=env)
