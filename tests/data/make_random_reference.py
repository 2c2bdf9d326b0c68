"""Writes mxnet_random_reference.json here with real MXNet 1.9.1:

    /tmp/mxnet-venv/bin/python tests/data/make_random_reference.py

For each case (a Python expression over ``mx`` run by MXNet and, in
tests/test_random_api.py, by ``mx``), the output shapes and dtypes, or the
exception type when the call fails.  The values are not recorded: ours come
from our Philox stream, MXNet's from its own generators.
"""
import json
from pathlib import Path

import mxnet as mx

OUT = Path(__file__).resolve().parent / "mxnet_random_reference.json"

# Parameters as NDArrays of a given shape and dtype.
P2 = "mx.nd.array([[1.5, 2.0], [0.5, 3.0]], dtype='{}')"
CASES = [
    "mx.nd.random.uniform()", "mx.nd.random.uniform(0, 2, shape=(2, 3), dtype='float64')",
    "mx.nd.random.normal(shape=5, dtype='float16')", "mx.nd.random.randn(2, 3)",
    "mx.nd.random.randn(2, loc=1.0, scale=2.0, dtype='float64')",
    "mx.nd.random.randint(0, 10, shape=(3,))", "mx.nd.random.randint(0, 10, shape=3, dtype='int64')",
    "mx.nd.random.exponential(2.0, shape=(4,))", "mx.nd.random.exponential(shape=(2, 2), dtype='float64')",
    "mx.nd.random.gamma(2.0, 3.0, shape=(4,))", "mx.nd.random.gamma(0.5, shape=(3,), dtype='float16')",
    "mx.nd.random.poisson(3.0, shape=(2, 3))", "mx.nd.random.poisson(dtype='float64')",
    "mx.nd.random.negative_binomial(3, 0.4, shape=(5,))",
    "mx.nd.random.generalized_negative_binomial(2.0, 0.5, shape=(5,), dtype='float64')",
    "mx.nd.random.uniform(shape=(2, 3), out=mx.nd.zeros((2, 3), dtype='float64'))",
    "mx.nd.random.gamma(out=mx.nd.zeros((4,)))",
    # per-element parameters: the output is the parameters' shape + shape
    f"mx.nd.random.uniform({P2.format('float32')}, {P2.format('float32')} + 1)",
    f"mx.nd.random.uniform({P2.format('float64')}, {P2.format('float64')} + 1, shape=3)",
    f"mx.nd.random.normal({P2.format('float64')}, {P2.format('float64')}, shape=(2, 2))",
    f"mx.nd.random.normal({P2.format('float16')}, {P2.format('float16')}, dtype='float32')",
    f"mx.nd.random.normal({P2.format('float32')}, {P2.format('float32')}, dtype='float64')",
    f"mx.nd.random.gamma({P2.format('float32')}, {P2.format('float32')}, shape=4)",
    f"mx.nd.random.exponential({P2.format('float64')}, shape=2)",
    f"mx.nd.random.poisson({P2.format('float32')}, shape=(3,))",
    f"mx.nd.random.negative_binomial({P2.format('float32')}, {P2.format('float32')} / 4)",
    f"mx.nd.random.generalized_negative_binomial({P2.format('float64')}, {P2.format('float64')})",
    f"mx.nd.random.randn(3, loc={P2.format('float32')}, scale={P2.format('float32')})",
    "mx.nd.sample_gamma(mx.nd.ones((3,)), mx.nd.ones((3,)), shape=(2,))",
    "mx.nd.sample_poisson(mx.nd.ones((3,), dtype='float64'))",
    "mx.nd.sample_uniform(mx.nd.zeros((2,)), mx.nd.ones((2,)), shape=(2, 2), dtype='float16')",
    # multinomial
    "mx.nd.random.multinomial(mx.nd.array([[0.1, 0.9], [0.5, 0.5]]))",
    "mx.nd.random.multinomial(mx.nd.array([0.1, 0.2, 0.7]))",
    "mx.nd.random.multinomial(mx.nd.array([0.1, 0.2, 0.7]), shape=(2, 3))",
    "mx.nd.random.multinomial(mx.nd.array([[0.1, 0.9], [0.5, 0.5]]), shape=4, get_prob=True)",
    "mx.nd.random.multinomial(mx.nd.array([[0.1, 0.9]], dtype='float64'), get_prob=True)",
    "mx.nd.random.multinomial(mx.nd.array([0.3, 0.7]), dtype='float32')",
    "mx.nd.random.multinomial(mx.nd.array([0.3, 0.7]), dtype='uint8', get_prob=True)",
    "mx.nd.sample_multinomial(mx.nd.array([0.3, 0.7]), shape=(2,))",
    # the *_like forms: the data's shape and dtype
    "mx.nd.random.uniform_like(mx.nd.zeros((2, 3), dtype='float64'), low=1, high=2)",
    "mx.nd.random.normal_like(mx.nd.zeros((4,), dtype='float16'))",
    "mx.nd.random.gamma_like(mx.nd.zeros((2, 2)), alpha=2.0)",
    "mx.nd.random.exponential_like(mx.nd.zeros((3,)), lam=2.0)",
    "mx.nd.random.poisson_like(mx.nd.zeros((3,), dtype='float64'), lam=4.0)",
    "mx.nd.random.negative_binomial_like(mx.nd.zeros((3,)), k=2, p=0.5)",
    "mx.nd.random.generalized_negative_binomial_like(mx.nd.zeros((3,)), mu=2.0, alpha=0.3)",
    "mx.nd.random.shuffle(mx.nd.array([[1, 2], [3, 4], [5, 6]]))",
    # the errors a script could meet
    "mx.nd.random.normal(mx.nd.zeros((2,)), 1.0)",
    "mx.nd.random.normal(0, mx.nd.ones((2,)))",
    "mx.nd.random.normal('a', 1)",
    "mx.nd.random.uniform(mx.nd.zeros((2,)), mx.nd.ones((3,)))",
    "mx.nd.random.uniform(2, 1, shape=(2,))",
    "mx.nd.random.randint(mx.nd.zeros((2,)), mx.nd.ones((2,)))",
    "mx.nd.random.randint(0, 10, shape=(2,), dtype='float32')",
    "mx.nd.random.randn(2, loc='x')",
    "mx.nd.random.multinomial(mx.nd.array([0.3, 0.7]), dtype='int64')",
    "mx.random.seed('x')",
    "mx.random.seed(1.5)",
]
# The same cases through mx.sym.random, bound and run.
SYM_CASES = [
    "mx.sym.random.uniform(0, 1, shape=(2, 3))",
    "mx.sym.random.gamma(2.0, 1.0, shape=(4,), dtype='float64')",
    "mx.sym.random.poisson(mx.sym.Variable('lam'), shape=(3,))",
    "mx.sym.random.normal(mx.sym.Variable('lam'), mx.sym.Variable('s'), shape=2)",
    "mx.sym.random.gamma(mx.sym.Variable('lam'), mx.sym.Variable('s'), dtype='float64')",
    "mx.sym.random.multinomial(mx.sym.Variable('p'))",
    "mx.sym.random.multinomial(mx.sym.Variable('p'), get_prob=False, shape=(2,))",
    "mx.sym.random.exponential_like(mx.sym.Variable('lam'), lam=3.0)",
    "mx.sym.random.normal(mx.sym.Variable('lam'), 1.0)",
]
SYM_ARGS = {"lam": "mx.nd.array([[1.0, 2.0]])", "s": "mx.nd.array([[0.5, 1.5]])", "p": "mx.nd.array([[0.2, 0.8], [0.5, 0.5]])"}


def describe(value):
    outs = value if isinstance(value, (list, tuple)) else [value]
    for o in outs:
        o.wait_to_read()
    return {"shapes": [list(o.shape) for o in outs], "dtypes": [o.dtype.__name__ if
                                                                isinstance(o.dtype, type)
                                                                else str(o.dtype) for o in outs]}


def run(expr):
    try:
        return describe(eval(expr))
    except Exception as e:    # noqa: BLE001 -- the reference records any failure
        return {"error": "MXNetError" if isinstance(e, mx.base.MXNetError) else type(e).__name__}


def run_sym(expr):
    try:
        sym = eval(expr)
        args = {k: eval(v) for k, v in SYM_ARGS.items() if k in sym.list_arguments()}
        return describe(sym.bind(mx.cpu(), args).forward())
    except Exception as e:    # noqa: BLE001
        return {"error": "MXNetError" if isinstance(e, mx.base.MXNetError) else type(e).__name__}


def main():
    ref = {"nd": {c: run(c) for c in CASES}, "sym": {c: run_sym(c) for c in SYM_CASES},
           "sym_args": SYM_ARGS}
    OUT.write_text(json.dumps(ref, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
