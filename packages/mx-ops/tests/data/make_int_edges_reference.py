"""Writes int_edges_mxnet191.json here with real MXNet 1.9.1:

    /tmp/mxnet-venv/bin/python packages/mx-ops/tests/data/make_int_edges_reference.py

What MXNet 1.9.1 gives on integer edge values (MIN, MIN + 1, -1, 0, 1, 2,
MAX - 1, MAX of int8, uint8, int32, int64) and on float edge values cast to
integers, for test_int_arith.py to compare with.  Each group runs in a
subprocess of its own, since MXNet dies of SIGFPE on some of them; a group
that dies is stored as {"signal": name} instead of values.  Keys:

- ``binary.<op>.<dtype>``: ``op`` over every (a, b) pair of edge values,
  a major (elemwise_add, elemwise_sub, elemwise_mul, _mod, elemwise_div;
  for elemwise_div the pairs with b == 0 or (MIN, -1) are left out, and
  ``trap.<op>.<dtype>.<a>.<b>`` records what each of those does alone);
- ``unary.<op>.<dtype>``: negative, abs, square, sign over the edge values;
- ``scalar.<dtype>.<scalar>``: _plus_scalar(zeros, scalar), i.e. the
  scalar converted to the array's dtype;
- ``cast.<src>.<dst>``: the float edge values of FLOATS cast from ``src``;
- ``trap.*``: {"signal": ...} or {"values": ...} for the calls that trap.
"""
import json
import signal
import subprocess
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent / "int_edges_mxnet191.json"
INTS = {"int8": 8, "uint8": 8, "int32": 32, "int64": 64}
FLOATS = ["nan", "inf", "-inf", "1e20", "-1e20", "1e10", "-1e10", "2147483648.0",
          "-2147483649.0", "300.7", "-300.7", "255.9", "-1.5", "-0.5", "2.5", "127.0", "-129.0"]
UNARY = ["negative", "abs", "square", "sign"]
SCALARS = ["1e10", "-1e10", "inf", "-inf", "300.7", "-1.5", "2147483648.0", "-9.3e18"]


def edges(dtype):
    bits = INTS[dtype]
    lo, hi = (0, 2 ** bits - 1) if dtype == "uint8" else (-2 ** (bits - 1), 2 ** (bits - 1) - 1)
    return sorted({v for v in (lo, lo + 1, -1, 0, 1, 2, hi - 1, hi) if lo <= v <= hi})


def run(code):
    """{"values": ...} from a subprocess that prints a JSON list, or
    {"signal": name} when it dies of one."""
    prog = ("import json, mxnet as mx, numpy as np\n"
            "op = lambda name: getattr(mx.nd, name, None) or getattr(mx.nd._internal, name)\n"
            + code)
    p = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=300)
    if p.returncode < 0:
        return {"signal": signal.Signals(-p.returncode).name}
    if p.returncode:
        raise RuntimeError(p.stderr)
    return {"values": json.loads(p.stdout.strip().splitlines()[-1])}


def arrays(dtype, a, b):
    return (f"a = mx.nd.array(np.array({a}, dtype='{dtype}'), dtype='{dtype}')\n"
            f"b = mx.nd.array(np.array({b}, dtype='{dtype}'), dtype='{dtype}')\n")


def call(op, args):
    """The code that prints op(args) as a JSON list."""
    return f"print(json.dumps(op('{op}')({args}).asnumpy().tolist()))"


def main():
    ref = {}
    for dtype in INTS:
        e = edges(dtype)
        pairs = [(a, b) for a in e for b in e]
        for op in ("elemwise_add", "elemwise_sub", "elemwise_mul", "_mod", "elemwise_div"):
            keep = pairs
            if op == "elemwise_div":
                keep = [(a, b) for a, b in pairs if b != 0 and not (a == e[0] and b == -1)]
                for a, b in sorted(set(pairs) - set(keep)):
                    ref[f"trap.{op}.{dtype}.{a}.{b}"] = run(
                        arrays(dtype, [a], [b]) + call(op, "a, b"))
            a, b = [p[0] for p in keep], [p[1] for p in keep]
            ref[f"binary.{op}.{dtype}"] = dict(run(arrays(dtype, a, b) + call(op, "a, b")),
                                               a=a, b=b)
        unary = run(arrays(dtype, e, e) + "print(json.dumps([op(name)(a).asnumpy().tolist() "
                    f"for name in {UNARY}]))")
        for name, values in zip(UNARY, unary["values"]):
            ref[f"unary.{name}.{dtype}"] = {"values": values, "x": e}
        scalars = run(f"z = mx.nd.zeros((1,), dtype='{dtype}')\n"
                      "print(json.dumps([mx.nd._internal._plus_scalar(z, scalar=float(s))"
                      f".asnumpy().tolist() for s in {SCALARS}]))")
        for s, values in zip(SCALARS, scalars["values"]):
            ref[f"scalar.{dtype}.{s}"] = {"values": values}
    for src in ("float16", "float32", "float64"):
        for dst in INTS:
            ref[f"cast.{src}.{dst}"] = dict(run(
                f"x = mx.nd.array(np.array([float(v) for v in {FLOATS}]), dtype='{src}')\n"
                f"print(json.dumps(mx.nd.cast(x, dtype='{dst}').asnumpy().tolist()))"), x=FLOATS)
    lines = [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in sorted(ref.items())]   # one a line
    OUT.write_text("{\n" + ",\n".join(lines) + "\n}\n")


if __name__ == "__main__":
    main()
