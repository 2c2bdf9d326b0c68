"""One training step of a two-layer network, as a DAG of NumPy kernels run by
the dependency engine.

    python examples/engine_dag.py [--quick] [--trace PATH]

The batch is split into row blocks.  Per block: forward (X @ W1, tanh,
@ W2), the error against the targets, its squared sum, and the weight
gradients of both layers; the per-block gradients are summed into dW1 and
dW2 and the per-block losses into one loss (the joins).  Every kernel is
pushed with the buffers it reads as const vars and those it writes as
mutate vars, so the blocks run in parallel on the engine's workers while the
sums stay in push order.

The same kernels run serially first; the engine's results must match them
(np.allclose) or the script fails.  It prints both times and the speed-up,
writes a profiler trace (chrome://tracing or ui.perfetto.dev) and prints the
profiler's per-kernel table.
"""
import os

# One BLAS thread per kernel, set before NumPy loads OpenBLAS: the engine's
# workers are the parallelism here (as MXNet ran one OpenMP thread per
# worker), and a threaded BLAS under them would oversubscribe the cores.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import functools  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from typing import Callable, NamedTuple  # noqa: E402

import numpy as np  # noqa: E402

import mx_engine  # noqa: E402
from mx_engine import engine, profiler  # noqa: E402

FULL = {"blocks": 8, "rows": 256, "dim": 512, "repeat": 5}
QUICK = {"blocks": 4, "rows": 32, "dim": 64, "repeat": 1}
SEED = 7
OUTPUTS = ("loss", "dW1", "dW2")


class Kernel(NamedTuple):
    """One node of the DAG: ``fn(*reads, *writes)`` on the named buffers."""
    name: str
    fn: Callable
    reads: tuple
    writes: tuple


# --- kernels: inputs first, then the buffers they write -----------------------
def _matmul(a, b, out):
    np.dot(a, b, out=out)


def _matmul_bt(a, b, out):
    np.dot(a, b.T, out=out)


def _matmul_at(a, b, out):
    np.dot(a.T, b, out=out)


def _tanh(h):
    np.tanh(h, out=h)


def _minus(target, y):
    np.subtract(y, target, out=y)


def _tanh_grad(h, d):
    d *= 1.0 - h * h


def _sum_squares(y, out):
    out[0] = np.vdot(y, y)


def _accumulate(g, acc):
    np.add(acc, g, out=acc)


def _scale(factor, acc):
    np.multiply(acc, factor, out=acc)


def _total(*parts_then_out):
    *parts, out = parts_then_out
    out[0] = sum(p[0] for p in parts)


def make_inputs(blocks, rows, dim, seed=SEED):
    """Seeded inputs of one step.

    Parameters
    ----------
    blocks, rows, dim : int
        Row blocks of the batch, rows per block, and features (input, hidden
        and output width alike).
    seed : int
        Seed of the random generator.

    Returns
    -------
    dict
        Buffer name -> array: ``X{i}`` and ``T{i}`` per block, ``W1``, ``W2``.
    """
    rng = np.random.default_rng(seed)
    inputs = {"W1": rng.standard_normal((dim, dim)) / np.sqrt(dim),
              "W2": rng.standard_normal((dim, dim)) / np.sqrt(dim)}
    for i in range(blocks):
        inputs[f"X{i}"] = rng.standard_normal((rows, dim))
        inputs[f"T{i}"] = rng.standard_normal((rows, dim))
    return inputs


def make_step(blocks, rows, dim):
    """The kernels of one step, in a valid serial order.

    Parameters
    ----------
    blocks, rows, dim : int
        As for ``make_inputs``.

    Returns
    -------
    list of Kernel
    """
    kernels = []
    for i in range(blocks):
        x, t, h, y, d = f"X{i}", f"T{i}", f"H{i}", f"Y{i}", f"D{i}"
        g1, g2, sq = f"G1_{i}", f"G2_{i}", f"L{i}"
        kernels += [
            Kernel("fc1", _matmul, (x, "W1"), (h,)),
            Kernel("tanh", _tanh, (), (h,)),
            Kernel("fc2", _matmul, (h, "W2"), (y,)),
            Kernel("error", _minus, (t,), (y,)),
            Kernel("sum_squares", _sum_squares, (y,), (sq,)),
            Kernel("grad_w2", _matmul_at, (h, y), (g2,)),
            Kernel("backprop", _matmul_bt, (y, "W2"), (d,)),
            Kernel("tanh_grad", _tanh_grad, (h,), (d,)),
            Kernel("grad_w1", _matmul_at, (x, d), (g1,)),
            Kernel("accumulate", _accumulate, (g2,), ("dW2",)),
            Kernel("accumulate", _accumulate, (g1,), ("dW1",)),
        ]
    mean = functools.partial(_scale, 1.0 / (blocks * rows))
    kernels += [
        Kernel("loss", _total, tuple(f"L{i}" for i in range(blocks)), ("loss",)),
        Kernel("mean", mean, (), ("dW1",)),
        Kernel("mean", mean, (), ("dW2",)),
    ]
    return kernels


def make_workspace(inputs, blocks, rows, dim):
    """The inputs plus fresh buffers for everything a step writes."""
    # np.full, not np.zeros: zeros maps its pages lazily, and the page faults
    # would land inside the timed run.
    ws = dict(inputs)
    for i in range(blocks):
        for name in (f"H{i}", f"Y{i}", f"D{i}"):
            ws[name] = np.full((rows, dim), 0.0)
        for name in (f"G1_{i}", f"G2_{i}"):
            ws[name] = np.full((dim, dim), 0.0)
        ws[f"L{i}"] = np.full(1, 0.0)
    ws.update(dW1=np.full((dim, dim), 0.0), dW2=np.full((dim, dim), 0.0),
              loss=np.full(1, 0.0))
    return ws


def run_serial(kernels, ws):
    """Runs the kernels one after another in this thread."""
    for k in kernels:
        k.fn(*(ws[n] for n in k.reads + k.writes))


def run_engine(kernels, ws, variables, ctx):
    """Pushes every kernel to the engine and waits for the outputs.

    Parameters
    ----------
    kernels : list of Kernel
    ws : dict
        Buffer name -> array.
    variables : dict
        Buffer name -> engine variable.
    ctx : mx_engine.Context
        Where the kernels run.
    """
    for k in kernels:
        args = [ws[n] for n in k.reads + k.writes]
        engine.push_sync(lambda run_ctx, fn=k.fn, args=args: fn(*args), ctx,
                         const_vars=[variables[n] for n in k.reads],
                         mutate_vars=[variables[n] for n in k.writes], name=k.name)
    for name in OUTPUTS:
        engine.wait_for_var(variables[name])


def check(expected, actual):
    """Raises AssertionError naming the first output that differs."""
    for name in OUTPUTS:
        if not np.allclose(actual[name], expected[name], rtol=1e-9, atol=1e-12):
            diff = np.max(np.abs(actual[name] - expected[name]))
            raise AssertionError(f"engine_dag: output {name!r} differs from the serial "
                                 f"run by up to {diff:.3g}")


def main(argv=None):
    """Times the step serially and through the engine, checks, profiles.

    Parameters
    ----------
    argv : list of str, optional
        Command-line arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status: 0, or an exception when the results differ.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a small, fast smoke run")
    parser.add_argument("--trace", default="engine_dag_trace.json",
                        help="where to write the profiler trace (default %(default)s)")
    args = parser.parse_args(argv)
    cfg = QUICK if args.quick else FULL
    blocks, rows, dim = cfg["blocks"], cfg["rows"], cfg["dim"]

    ctx = mx_engine.cpu()
    inputs = make_inputs(blocks, rows, dim)
    kernels = make_step(blocks, rows, dim)
    names = {n for k in kernels for n in k.reads + k.writes}
    variables = {n: engine.new_variable(n) for n in sorted(names)}

    serial_times, engine_times = [], []
    # The first engine run also starts the workers, so it is not timed.
    run_engine(kernels, make_workspace(inputs, blocks, rows, dim), variables, ctx)
    for _ in range(cfg["repeat"]):
        expected = make_workspace(inputs, blocks, rows, dim)
        start = time.perf_counter()
        run_serial(kernels, expected)
        serial_times.append(time.perf_counter() - start)

        actual = make_workspace(inputs, blocks, rows, dim)
        start = time.perf_counter()
        run_engine(kernels, actual, variables, ctx)
        engine_times.append(time.perf_counter() - start)
        check(expected, actual)

    profiler.set_config(filename=args.trace, profile_all=True)
    profiler.set_state("run")
    profiled = make_workspace(inputs, blocks, rows, dim)
    run_engine(kernels, profiled, variables, ctx)
    check(expected, profiled)
    table = profiler.dumps()
    profiler.dump()

    serial, threaded = min(serial_times), min(engine_times)
    workers = os.environ.get("MXNET_CPU_WORKER_NTHREADS") or f"{os.cpu_count()} (default)"
    print(f"engine_dag: {blocks} blocks x {rows} rows, {dim} features, {len(kernels)} "
          f"kernels; {engine.engine_type()}, cpu workers {workers}, "
          f"OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}")
    print(f"serial   {serial * 1e3:8.2f} ms   (best of {len(serial_times)})")
    print(f"engine   {threaded * 1e3:8.2f} ms   (best of {len(engine_times)})")
    print(f"speed-up {serial / threaded:8.2f}x")
    print(f"check    {', '.join(OUTPUTS)} match the serial run "
          f"(loss {expected['loss'][0]:.6g})")
    print(f"trace    {args.trace}")
    print()
    print(table, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
