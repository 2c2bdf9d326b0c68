"""The fused RNN side by side: ours (``import mx``), MXNet 1.9.1 and
PyTorch CPU (torch.nn.LSTM), each in its own interpreter as a subprocess
that times calls on request.

    python benchmarks/compare_rnn.py [--quick] [--repeat N] [--threads N]
        [--clock wall|cpu] [--mxnet-python PATH] [--torch-python PATH]

Case (float32): LSTM, 2 layers, hidden 256, sequence 35, batch 32, input
256; forward alone (inference) and forward + backward (training, the
gradients of data, parameters and initial states).  Each repeat runs a
short burst of every side in turn, after a pause in which the others'
thread pools stop spinning (benchmarks.common's burst), so a busy shared
machine's quiet moments fall to all sides alike; a side's time is its best
warm call over all repeats (on a machine shared with other jobs the best
call is the one least disturbed), ratios are ours / theirs (below 1: ours
is faster).  Every side gets the same threads (OMP_NUM_THREADS; MXNet's
OpenBLAS with OPENBLAS_CORETYPE=Haswell).  ``--clock cpu`` times each call
by its process's CPU time instead of the wall clock: with one thread on a
machine whose other jobs take the cores away, the time a side actually
computed (it counts every thread of the process, spinning ones included,
so it is no measure for several threads).
"""
import argparse
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

if __name__ == "__main__" and not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import BURST, format_table

# Seconds between bursts: longer than the spin time of the idle sides'
# thread pools (OpenMP, OpenBLAS), which would take a core from the next.
GAP_S = 0.3
from benchmarks.mxnet_worker import MXNET_PYTHON, mxnet_env

_PRELUDE = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    T, N, I, H, L = (int(a) for a in sys.argv[1:6])
    clock = time.process_time if sys.argv[6] == "cpu" else time.perf_counter
    G = 4 * H
    NPARAM = G * (I + H + 2) + (L - 1) * G * (2 * H + 2)
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (T, N, I)).astype(np.float32)
    W = rng.uniform(-0.06, 0.06, NPARAM).astype(np.float32)
    H0 = np.zeros((L, N, H), np.float32)
    HEAD = rng.uniform(-1, 1, (T, N, H)).astype(np.float32)
    def serve(cases):
        # One request per stdin line: {"case": name, "count": k}; replies the
        # seconds of k back-to-back calls.
        print(json.dumps({"ready": True}), flush=True)
        for line in sys.stdin:
            req = json.loads(line)
            fn, out = cases[req["case"]], []
            for _ in range(req["count"]):
                t = clock()
                fn()
                out.append(clock() - t)
            print(json.dumps(out), flush=True)
""")

# Ours and MXNet share the script: the same mx.nd / mx.autograd calls.
_MX_SCRIPT = textwrap.dedent("""
    import {module} as mx
    nd = mx.nd
    x, w, h0, c0, head = (nd.array(a) for a in (X, W, H0, H0, HEAD))
    for a in (x, w, h0, c0):
        a.attach_grad()
    kw = dict(state_size=H, num_layers=L, mode="lstm", state_outputs=True)
    def forward():
        nd.RNN(x, w, h0, c0, **kw)[0].wait_to_read()
    def both():
        with mx.autograd.record():
            out = nd.RNN(x, w, h0, c0, **kw)[0]
        out.backward(head)
        w.grad.wait_to_read(); x.grad.wait_to_read()
    serve({{"forward": forward, "both": both}})
""")

_TORCH_SCRIPT = _PRELUDE + textwrap.dedent("""
    import torch
    torch.set_num_threads(int(__import__("os").environ.get("OMP_NUM_THREADS", "1")))
    lstm = torch.nn.LSTM(I, H, L)
    x = torch.from_numpy(X).requires_grad_()
    h0, c0 = torch.zeros(L, N, H, requires_grad=True), torch.zeros(L, N, H, requires_grad=True)
    head = torch.from_numpy(HEAD)
    def forward():
        with torch.no_grad():
            lstm(x, (h0, c0))
    def both():
        out, _ = lstm(x, (h0, c0))
        out.backward(head)
    serve({"forward": forward, "both": both})
""")

CASES = [("forward", "LSTM forward (inference)"),
         ("both", "LSTM forward + backward")]


class Side:
    """One side's timing subprocess (None when its interpreter is missing)."""

    def __init__(self, python, script, sizes, env):
        self.proc = subprocess.Popen([python, "-c", script, *map(str, sizes)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env=env)
        if not self.proc.stdout.readline():
            raise RuntimeError(f"{python} failed to start its side")

    @classmethod
    def start(cls, python, script, sizes, env):
        if not python or not os.path.exists(python):
            return None
        try:
            return cls(python, script, sizes, env)
        except RuntimeError as e:
            print(f"({e})")
            return None

    def runner(self, case):
        def run(count):
            self.proc.stdin.write(json.dumps({"case": case, "count": count}) + "\n")
            self.proc.stdin.flush()
            return json.loads(self.proc.stdout.readline())
        return run

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def _best_interleaved(sides, case, repeat, gap=GAP_S, count=BURST):
    """Per side (None where missing), its best warm call over ``repeat``
    rounds of one burst of ``count`` calls per side in turn."""
    best = [None if s is None else float("inf") for s in sides]
    for _ in range(repeat):
        for i, s in enumerate(sides):
            if s is not None:
                time.sleep(gap)
                best[i] = min(best[i], min(s.runner(case)(count)[1:]))
    return best


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    parser.add_argument("--mxnet-python", default=MXNET_PYTHON)
    parser.add_argument("--torch-python",
                        default=os.environ.get("MX_TORCH_PYTHON", "/tmp/torch-venv/bin/python"))
    args = parser.parse_args(argv)
    sizes = (5, 4, 16, 16, 2) if args.quick else (35, 32, 256, 256, 2)
    argv_tail = (*sizes, args.clock)
    repeat = 2 if args.quick else args.repeat
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    sides = [Side.start(sys.executable, _PRELUDE + _MX_SCRIPT.format(module="mx"), argv_tail,
                        env),
             Side.start(args.mxnet_python, _PRELUDE + _MX_SCRIPT.format(module="mxnet"),
                        argv_tail, mxnet_env(args.threads)),
             Side.start(args.torch_python, _TORCH_SCRIPT, argv_tail, env)]
    if sides[0] is None:
        raise SystemExit("our side failed to start")
    live = [s for s in sides if s is not None]
    rows = [("case", "ours", "MXNet 1.9.1", "PyTorch", "ours/MXNet", "ours/PyTorch")]
    for key, label in CASES:
        best = _best_interleaved(sides, key, repeat)
        fmt = lambda b: "-" if b is None else f"{b * 1e3:.2f} ms"         # noqa: E731
        ratio = lambda b: "-" if b is None else f"{best[0] / b:.2f}"      # noqa: E731
        rows.append((label, fmt(best[0]), fmt(best[1]), fmt(best[2]), ratio(best[1]),
                     ratio(best[2])))
    for s in live:
        s.close()
    T, N, I, H, L = sizes
    print(f"float32, T={T} N={N} I={I} H={H} layers={L}, {args.threads} threads, "
          f"best warm call of {repeat} interleaved bursts of {BURST} calls per side, CPU, "
          f"{args.clock} clock\n")
    print(format_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
