"""Integer edge values through mx.nd and a bound executor (issue 12,
finding 1): `mx.nd.array([-2**31], dtype='int32') / mx.nd.array([-1],
dtype='int32')` killed the process with SIGFPE, as did MIN % -1 on the
broadcast, scalar and reflected-scalar paths and inside an executor.  Each
probe runs in a subprocess, so that a regression fails its test instead of
killing pytest; the values are those of mx_ops' src/int_arith.h (NumPy's
wrap-around, 0 for a zero divisor)."""
import json
import signal
import subprocess
import sys
import textwrap

import pytest

MIN32, MIN64 = -2 ** 31, -2 ** 63


def probe(code):
    """The JSON the code prints last, run in a fresh interpreter."""
    prog = "import json\nimport mx\nimport numpy as np\n" + textwrap.dedent(code)
    p = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=240)
    if p.returncode < 0:
        pytest.fail(f"the probe was killed by {signal.Signals(-p.returncode).name}")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.mark.timeout(300)
@pytest.mark.parametrize("dtype, lo", [("int32", MIN32), ("int64", MIN64)])
def test_ndarray_min_by_minus_one_on_every_path(dtype, lo):
    got = probe(f"""
        a = mx.nd.array(np.array([{lo}, 7]), dtype='{dtype}')
        m = mx.nd.array(np.array([-1, -1]), dtype='{dtype}')
        z = mx.nd.array(np.array([0, 0]), dtype='{dtype}')
        m1 = mx.nd.array(np.array([-1]), dtype='{dtype}')
        out = {{
            "div": a / m, "mod": a % m, "div0": a / z, "mod0": a % z,
            "broadcast_div": mx.nd.broadcast_div(a, m1),
            "broadcast_mod": mx.nd.broadcast_mod(a, m1),
            "div_scalar": a / -1, "mod_scalar": a % -1,
            "rdiv_scalar": {lo} / m, "rmod_scalar": {lo} % m,
        }}
        print(json.dumps({{k: v.asnumpy().tolist() for k, v in out.items()}}))
    """)
    assert got == {
        "div": [lo, -7], "mod": [0, 0], "div0": [0, 0], "mod0": [0, 0],
        "broadcast_div": [lo, -7], "broadcast_mod": [0, 0],
        "div_scalar": [lo, -7], "mod_scalar": [0, 0],
        "rdiv_scalar": [lo, lo], "rmod_scalar": [0, 0],
    }


@pytest.mark.timeout(300)
def test_issue_repro():
    got = probe("""
        r = mx.nd.array([-2**31], dtype='int32') / mx.nd.array([-1], dtype='int32')
        print(json.dumps([np.dtype(r.dtype).name, r.asnumpy().tolist()]))
    """)
    assert got == ["int32", [MIN32]]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("dtype, lo", [("int32", MIN32), ("int64", MIN64)])
def test_bound_executor(dtype, lo):
    """A graph of div, mod, a scalar div and a reflected mod, bound and run
    twice (the second forward reuses the executor's memory plan)."""
    got = probe(f"""
        x, y = mx.sym.Variable('x'), mx.sym.Variable('y')
        net = mx.sym.Group([x / y, x % y, x / -1, {lo} % y, mx.sym.broadcast_div(x, y)])
        args = {{'x': mx.nd.array(np.array([{lo}, {lo}, 5]), dtype='{dtype}'),
                 'y': mx.nd.array(np.array([-1, 0, -1]), dtype='{dtype}')}}
        ex = net.bind(mx.cpu(), args)
        first = [o.asnumpy().tolist() for o in ex.forward()]
        second = [o.asnumpy().tolist() for o in ex.forward()]
        print(json.dumps([first, second]))
    """)
    want = [[lo, 0, -5], [0, 0, 0], [lo, lo, -5], [0, 0, 0], [lo, 0, -5]]
    assert got == [want, want]
