"""Custom operators whose callbacks push NDArray work, behind more dependent
work than MXNET_ENGINE_MAX_INFLIGHT allows in flight: the callbacks' threads
are what that work waits for, so backpressure must never stop them.  Each
case runs in a subprocess under every engine type; a hang is a timeout, so
it fails the test instead of hanging the suite."""
import os
import subprocess
import sys
import textwrap

import pytest

_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import mx_ndarray as nd
    from mx_ops.ext import custom

    class Plus1(custom.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0] + 1)     # pushes from the callback

    @custom.register("bp_plus1")
    class Plus1Prop(custom.CustomOpProp):
        def create_operator(self, ctx, in_shapes, in_dtypes):
            return Plus1()

    case, n = sys.argv[1], int(sys.argv[2])
    if case == "chain":               # one Custom, then n dependents
        y = nd.Custom(nd.zeros((1,)), op_type="bp_plus1")
        for _ in range(n):
            y = y + 1
        assert y.asnumpy()[0] == n + 1, y.asnumpy()
    elif case == "many":              # n independent Custom calls
        ys = [nd.Custom(nd.full((2,), i), op_type="bp_plus1") for i in range(n)]
        got = np.array([y.asnumpy()[0] for y in ys])
        np.testing.assert_array_equal(got, np.arange(n) + 1)
    elif case == "nested":            # Custom of Custom, each waiting in its callback
        class Outer(custom.CustomOp):
            def forward(self, is_train, req, in_data, out_data, aux):
                inner = nd.Custom(in_data[0], op_type="bp_plus1")
                inner.wait_to_read()
                self.assign(out_data[0], req[0], inner * 2)

        @custom.register("bp_outer")
        class OuterProp(custom.CustomOpProp):
            def create_operator(self, ctx, in_shapes, in_dtypes):
                return Outer()

        ys = [nd.Custom(nd.full((1,), i), op_type="bp_outer") for i in range(n)]
        zs = [y + 0 for y in ys for _ in range(4)]
        got = np.array([z.asnumpy()[0] for z in zs[::4]])
        np.testing.assert_array_equal(got, (np.arange(n) + 1) * 2)
    print("ok")
""")

ENGINE_TYPES = ["ThreadedEnginePerDevice", "ThreadedEnginePooled", "NaiveEngine"]


def _run(case, n, limit, engine_type, timeout=120):
    env = {**os.environ, "MXNET_ENGINE_TYPE": engine_type,
           "MXNET_ENGINE_MAX_INFLIGHT": str(limit)}
    try:
        proc = subprocess.run([sys.executable, "-c", _SCRIPT, case, str(n)], env=env,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{case} with MXNET_ENGINE_MAX_INFLIGHT={limit} under {engine_type} "
                    f"hung for {timeout} s")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().endswith("ok")


@pytest.mark.parametrize("engine_type", ENGINE_TYPES)
@pytest.mark.parametrize("case, n, limit", [("chain", 300, 64), ("many", 200, 4),
                                            ("nested", 40, 4)])
def test_custom_callbacks_are_never_held_back(case, n, limit, engine_type):
    _run(case, n, limit, engine_type)


def test_the_issue_case_with_the_default_limit():
    """70,000 dependents of one Custom with the default limit of 65,536."""
    _run("chain", 70_000, 65_536, "ThreadedEnginePerDevice", timeout=300)
