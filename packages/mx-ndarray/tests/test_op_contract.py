"""The parts of the operator contract that NDArray calls carry to a kernel:
Python computes, hidden outputs, inputs written in place (aux states),
temporary space and the training flag.  Each test registers its own
operator and removes it afterwards."""
import ctypes
import shutil
import subprocess

import numpy as np
import pytest

import mx_ops
from mx_ndarray import array, invoke
from mx_ops import registry
from mx_ops.core import training
from mx_ops.core._params import Param
from mx_ops.core.registry import OpDef
from mx_storage.resource import ResourceRequest


@pytest.fixture
def op():
    """Registers the OpDef a test builds; unregisters it afterwards."""
    names = []

    def add(opdef):
        registry.register(opdef)
        names.append(opdef.name)
        return opdef
    yield add
    for name in names:
        registry._unregister(name)


def _same(p, s):
    return [tuple(s[0])]


def _float(p, t):
    return [t[0]]


def test_python_compute_runs_on_the_worker_and_sees_the_training_flag(op):
    seen = []

    def compute(params, inputs, outputs, reqs):
        seen.append((params["_is_train"], reqs))
        outputs[0][...] = inputs[0] * params["scale"] + (1 if params["_is_train"] else 0)

    op(OpDef("_test_py_scale", arguments=("data",), params={"scale": Param("float", 2.0)},
             infer_shape=_same, infer_type=_float, compute={"cpu": compute}))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(invoke("_test_py_scale", [array(x)], scale=3).asnumpy(), 3 * x)
    with training.train_mode():
        y = invoke("_test_py_scale", [array(x)])
    np.testing.assert_array_equal(y.asnumpy(), 2 * x + 1)
    # mx_ops.invoke calls the same compute directly on NumPy arrays.
    np.testing.assert_array_equal(mx_ops.invoke("_test_py_scale", [x]), 2 * x)
    assert [s[0] for s in seen] == [False, True, False]
    assert seen[0][1] == ["write"]


def test_python_compute_error_names_the_op_and_leaves_the_engine_usable(op):
    def compute(params, inputs, outputs, reqs):
        raise ValueError("bad value inside")

    op(OpDef("_test_py_fail", arguments=("data",), infer_shape=_same, infer_type=_float,
             compute={"cpu": compute}))
    y = invoke("_test_py_fail", [array(np.ones(3, np.float32))])
    with pytest.raises(Exception, match="_test_py_fail.*bad value inside"):
        y.asnumpy()
    np.testing.assert_array_equal((array(np.ones(2)) + 1).asnumpy(), [2, 2])


def test_hidden_outputs_are_computed_but_not_returned(op):
    def compute(params, inputs, outputs, reqs):
        outputs[1][...] = np.sqrt((inputs[0] ** 2).sum())
        outputs[0][...] = inputs[0] / outputs[1]

    op(OpDef("_test_unit", arguments=("data",), outputs=("output", "norm"),
             num_visible_outputs=1, infer_shape=lambda p, s: [tuple(s[0]), ()],
             infer_type=lambda p, t: [t[0], t[0]], compute={"cpu": compute}))
    x = np.array([3.0, 4.0])
    y = invoke("_test_unit", [array(x)])
    np.testing.assert_allclose(y.asnumpy(), [0.6, 0.8])
    out = array(np.zeros(2))
    assert invoke("_test_unit", [array(x)], out=out) is out
    np.testing.assert_allclose(out.asnumpy(), [0.6, 0.8])
    # mx_ops.invoke is the low-level path: it returns every output.
    y, norm = mx_ops.invoke("_test_unit", [x])
    assert norm == 5.0
    with pytest.raises(ValueError, match="_test_unit: 'out' must hold 1"):
        invoke("_test_unit", [array(x)], out=[array(np.zeros(2)), array(np.zeros(()))])


def test_mutated_inputs_are_written_after_earlier_reads_and_before_later_ones(op):
    def compute(params, inputs, outputs, reqs):
        outputs[0][...] = inputs[0] + inputs[1]
        inputs[1] += 1           # a running counter, as BatchNorm's moving stats

    op(OpDef("_test_count", arguments=("data", "counter"), aux_states=("counter",),
             mutate_inputs=(1,), infer_shape=_same, infer_type=_float,
             compute={"cpu": compute}))
    counter = array(np.zeros(4))
    before = counter * 1                       # pushed first: must see 0
    outs = [invoke("_test_count", [array(np.ones(4)), counter]) for _ in range(3)]
    after = counter * 1                        # pushed last: must see 3
    np.testing.assert_array_equal(before.asnumpy(), 0)
    for i, o in enumerate(outs):
        np.testing.assert_array_equal(o.asnumpy(), 1 + i)
    np.testing.assert_array_equal(after.asnumpy(), 3)
    # mx_ops.invoke writes a NumPy counter in place, and refuses a copy.
    c = np.zeros(4)
    mx_ops.invoke("_test_count", [np.ones(4), c])
    np.testing.assert_array_equal(c, 1)
    with pytest.raises(ValueError, match="'counter' is written in place"):
        mx_ops.invoke("_test_count", [np.ones(4), [0.0, 0.0, 0.0, 0.0]])


_PROBE = r"""
#include <string.h>
#include <stdint.h>
#include "mx_ops/tblob.h"
/* Reports what the invoker handed it, and fills the whole workspace so
   that a short one would be caught by the pool's guards or by ASan. */
int probe(MXOpCall *c) {
  double *out = (double *)c->outputs[0].dptr;
  if (c->workspace_size > 0) memset(c->workspace, 0xAB, (size_t)c->workspace_size);
  out[0] = (double)c->workspace_size;
  out[1] = (double)((uintptr_t)c->workspace % 64);
  out[2] = (double)c->is_train;
  out[3] = c->workspace != NULL;
  return 0;
}
"""


@pytest.fixture(scope="module")
def probe_kernel(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.fail("a C compiler ('cc') is required to build the test kernel")
    d = tmp_path_factory.mktemp("probe")
    (d / "probe.c").write_text(_PROBE)
    lib = d / "probe.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-I", mx_ops.get_include(),
                    str(d / "probe.c"), "-o", str(lib)], check=True)
    so = ctypes.CDLL(str(lib))
    return so, ctypes.cast(so.probe, ctypes.c_void_p).value


def test_temp_space_and_training_flag_reach_a_native_kernel(op, probe_kernel):
    op(OpDef("_test_probe", arguments=("data",), params={"nbytes": Param("int", 1000)},
             infer_shape=lambda p, s: [(4,)], infer_type=lambda p, t: ["float64"],
             compute={"cpu": probe_kernel[1]}, resources=(ResourceRequest.TEMP_SPACE,),
             workspace=lambda p, s: p["nbytes"]))
    x = array(np.zeros(3))
    for nbytes in (1000, 5000, 17):
        size, misalign, train, present = invoke("_test_probe", [x], nbytes=nbytes).asnumpy()
        assert (size, misalign, train, present) == (nbytes, 0, 0, 1)
    with training.train_mode():
        assert invoke("_test_probe", [x]).asnumpy()[2] == 1
        assert mx_ops.invoke("_test_probe", [np.zeros(3)])[2] == 1
    assert list(mx_ops.invoke("_test_probe", [np.zeros(3)], nbytes=100)) == [100, 0, 0, 1]


def test_temp_space_needs_a_size_function():
    with pytest.raises(Exception, match="TEMP_SPACE resource and a 'workspace'"):
        OpDef("_test_bad_temp", arguments=("data",), infer_shape=_same, infer_type=_float,
              compute={"cpu": 0}, resources=(ResourceRequest.TEMP_SPACE,))


def test_training_flag_is_per_thread_and_restored():
    import threading
    assert not training.is_training()
    seen = []
    with training.train_mode():
        t = threading.Thread(target=lambda: seen.append(training.is_training()))
        t.start()
        t.join()
        assert training.is_training()
        with training.predict_mode():
            assert not training.is_training()
        assert training.is_training()
    assert not training.is_training()
    assert seen == [False]


def test_python_compute_gets_its_workspace(op):
    seen = []

    def compute(params, inputs, outputs, reqs):
        ws = params["_workspace"]
        seen.append((ws.dtype, ws.nbytes, ws.ctypes.data % 64))
        ws[...] = 7                    # scratch memory the call may overwrite
        outputs[0][...] = inputs[0] + ws[:inputs[0].size].astype(inputs[0].dtype)

    op(OpDef("_test_py_temp", arguments=("data",), infer_shape=_same, infer_type=_float,
             compute={"cpu": compute}, resources=(ResourceRequest.TEMP_SPACE,),
             workspace=lambda p, s: 10 * s[0][0]))
    x = np.zeros(3, np.float32)
    np.testing.assert_array_equal(invoke("_test_py_temp", [array(x)]).asnumpy(), [7, 7, 7])
    np.testing.assert_array_equal(mx_ops.invoke("_test_py_temp", [x]), [7, 7, 7])
    assert seen == [(np.uint8, 30, 0), (np.uint8, 30, 0)]
