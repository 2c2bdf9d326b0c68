"""Where a small GPU operator's time goes: the per-call cost of ``a + b`` on
2**10 float32 elements under each engine set-up, with the pieces measured
apart.

    python benchmarks/profile_gpu_dispatch.py [--calls N]

Each set-up runs in a child process (the engine type is fixed at start):
ThreadedEnginePerDevice with 2 GPU workers (the default) and with 1, and
NaiveEngine (every function runs in the pushing thread: no hand-over of
the GIL).  Per set-up, in microseconds per call:

- push: the calling thread's time to issue N calls (no wait),
- total: issuing N calls and waiting for all of them,
- cupy: the same add straight through CuPy on the default stream (launch
  only, then one device synchronisation),
- cupy+sync: CuPy's add followed by a stream synchronisation per call (what
  the engine's GPU worker does around each operator).
"""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

CHILD = r"""
import json, sys, time
import numpy as np
import cupy
import mx
n = int(sys.argv[1])
ctx = mx.gpu(0)
a = mx.nd.array(np.ones(2**10, np.float32), ctx=ctx)
b = mx.nd.array(np.ones(2**10, np.float32), ctx=ctx)
for _ in range(100):
    a + b
mx.nd.waitall()
t0 = time.perf_counter()
for _ in range(n):
    a + b
t1 = time.perf_counter()
mx.nd.waitall()
t2 = time.perf_counter()
x, y = cupy.ones(2**10, cupy.float32), cupy.ones(2**10, cupy.float32)
s = cupy.cuda.Stream(non_blocking=True)
for _ in range(100):
    x + y
cupy.cuda.Device().synchronize()
t3 = time.perf_counter()
for _ in range(n):
    x + y
cupy.cuda.Device().synchronize()
t4 = time.perf_counter()
with s:
    for _ in range(n):
        x + y
        s.synchronize()
t5 = time.perf_counter()
us = 1e6 / n
print(json.dumps({"push": (t1 - t0) * us, "total": (t2 - t0) * us,
                  "cupy": (t4 - t3) * us, "cupy+sync": (t5 - t4) * us}))
"""

SETUPS = {
    "ThreadedEnginePerDevice, 2 GPU workers": {},
    "ThreadedEnginePerDevice, 1 GPU worker": {"MXNET_GPU_WORKER_NTHREADS": "1"},
    "NaiveEngine": {"MXNET_ENGINE_TYPE": "NaiveEngine"},
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000)
    args = parser.parse_args(argv)
    root = str(Path(__file__).resolve().parent.parent)
    print(f"{'set-up':40s} {'push':>8s} {'total':>8s} {'cupy':>8s} {'cupy+sync':>10s}  (us/call)")
    for name, env in SETUPS.items():
        proc = subprocess.run([sys.executable, "-c", CHILD, str(args.calls)], cwd=root,
                              env=dict(os.environ, **env), capture_output=True, text=True,
                              timeout=300)
        if proc.returncode != 0:
            print(f"{name:40s} failed: {proc.stderr.strip().splitlines()[-1:]}")
            continue
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        print(f"{name:40s} {r['push']:8.1f} {r['total']:8.1f} {r['cupy']:8.1f} "
              f"{r['cupy+sync']:10.1f}", flush=True)


if __name__ == "__main__":
    main()
