"""Prepared operator calls (mx_ndarray.PreparedCall, push_all): the push
layer of a bound executor.  Results against mx.nd's invoke and NumPy for
every req, accumulation across pushes, in-place outputs and outputs that
are views of one shared chunk, random ops, Python computes, Custom
(compute_ex), long chains, errors at construction and in kernels."""
import gc

import numpy as np
import pytest

from mx_engine import MXNetError, cpu
import mx_ndarray as nd
from mx_ops import registry
from mx_ops.core import training
from mx_ops.core._params import ParamError
from mx_ops.core.registry import OpDef, ShapeError, TypeInferenceError
from mx_ops.ext import custom
from mx_ops.ops.elemwise import _elemwise_cpu
from mx_storage import resource
from mx_storage.resource import ResourceRequest

from mx_ndarray import PreparedCall, push_all

RNG = np.random.default_rng(5)
REQS = ["write", "inplace", "add", "null"]


def arr(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def prepared(op, inputs, outputs, reqs, **params):
    """A PreparedCall with params parsed as an executor's node holds them."""
    opdef = registry.get(op)
    return PreparedCall(opdef, opdef.parse_call(params, len(inputs)), inputs, outputs, reqs)


def expect(req, before, result):
    """What an output holds after one push with ``req``."""
    if req == "null":
        return before
    if req == "add":
        return before + result
    return result


# --- every req on native kernels ------------------------------------------------------------
@pytest.mark.parametrize("req", REQS)
def test_elemwise_add_every_req(req):
    a, b, o = arr(3, 4), arr(3, 4), arr(3, 4)
    out = nd.array(o, dtype=o.dtype)
    call = prepared("elemwise_add", [nd.array(a, dtype=a.dtype), nd.array(b, dtype=b.dtype)], [out], [req])
    assert call.compute_kind == "native" and call.reqs == (req,)
    call.push()
    np.testing.assert_allclose(out.asnumpy(), expect(req, o, a + b), rtol=1e-6)


def test_mxnet_req_ints_are_accepted():
    a = nd.array(arr(5))
    outs = [nd.zeros((5,)) + 1 for _ in range(4)]
    for flag, out in enumerate(outs):
        prepared("relu", [a], [out], [flag]).push()
    x = np.maximum(a.asnumpy(), 0)
    for flag, out in enumerate(outs):        # OpReqType: kNullOp, kWriteTo, ...
        req = ("null", "write", "inplace", "add")[flag]
        np.testing.assert_allclose(out.asnumpy(), expect(req, 1, x))


@pytest.mark.parametrize("req", REQS)
def test_fully_connected_every_req(req):
    x, w, b, o = arr(4, 6), arr(5, 6), arr(5), arr(4, 5)
    out = nd.array(o, dtype=o.dtype)
    args = [nd.array(v, dtype=v.dtype) for v in (x, w, b)]
    prepared("FullyConnected", args, [out], [req], num_hidden=5).push()
    ref = nd.FullyConnected(*args, num_hidden=5).asnumpy()
    np.testing.assert_allclose(out.asnumpy(), expect(req, o, ref), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("req", REQS)
def test_convolution_with_temp_space_every_req(req):
    x, w, b, o = arr(2, 3, 9, 9), arr(4, 3, 3, 3), arr(4), arr(2, 4, 7, 7)
    out = nd.array(o, dtype=o.dtype)
    args = [nd.array(v, dtype=v.dtype) for v in (x, w, b)]
    call = prepared("Convolution", args, [out], [req], kernel=(3, 3), num_filter=4)
    call.push()
    ref = nd.Convolution(*args, kernel=(3, 3), num_filter=4).asnumpy()
    np.testing.assert_allclose(out.asnumpy(), expect(req, o, ref), rtol=1e-4, atol=1e-5)


def test_convolution_keeps_its_workspace_when_the_temp_space_moves():
    args = [nd.array(v, dtype=v.dtype) for v in (arr(2, 3, 9, 9), arr(4, 3, 3, 3), arr(4))]
    out = nd.empty((2, 4, 7, 7))
    call = prepared("Convolution", args, [out], ["write"], kernel=(3, 3), num_filter=4)
    ref = nd.Convolution(*args, kernel=(3, 3), num_filter=4).asnumpy()
    for _ in range(3):
        # Other calls grow (or drop) the context's workspaces meanwhile: the
        # prepared call holds the block it was given.
        resource.release_workspaces(cpu(0))
        nd.Convolution(nd.ones((4, 16, 20, 20)), nd.ones((8, 16, 5, 5)), nd.ones(8),
                       kernel=(5, 5), num_filter=8)
        call.push()
        out[:] = out * 1        # a read and a write between pushes
        np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("req", REQS)
def test_softmax_every_req(req):
    x, o = arr(3, 7), arr(3, 7)
    out = nd.array(o, dtype=o.dtype)
    prepared("softmax", [nd.array(x, dtype=x.dtype)], [out], [req], axis=-1).push()
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(out.asnumpy(), expect(req, o, e / e.sum(-1, keepdims=True)),
                               rtol=1e-5, atol=1e-6)


def _bn_inputs():
    x = arr(4, 3, 5) * 2 + 1
    gamma, beta = RNG.uniform(0.5, 1.5, 3).astype(np.float32), arr(3)
    return [x, gamma, beta, np.zeros(3, np.float32), np.ones(3, np.float32)]


def test_batch_norm_updates_its_aux_states_on_every_push():
    host = _bn_inputs()
    mine, theirs = [nd.array(v, dtype=v.dtype) for v in host], [nd.array(v, dtype=v.dtype) for v in host]
    y, mean, var = nd.empty((4, 3, 5)), nd.empty((3,)), nd.empty((3,))
    call = prepared("BatchNorm", mine, [y, mean, var], ["write"] * 3, fix_gamma=False,
                    momentum=0.9)
    for _ in range(2):
        call.push(is_train=True)
        with training.train_mode():
            ref = nd.BatchNorm(*theirs, fix_gamma=False, momentum=0.9)
    np.testing.assert_allclose(y.asnumpy(), ref.asnumpy(), rtol=1e-5, atol=1e-5)
    for a, b in zip(mine[3:], theirs[3:]):           # moving mean, moving var: twice
        np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-5, atol=1e-6)
    assert not np.allclose(mine[3].asnumpy(), 0)
    np.testing.assert_allclose(mean.asnumpy(), host[0].mean(axis=(0, 2)), rtol=1e-5,
                               atol=1e-6)
    # Inference: moving statistics used and left alone; hidden outputs not needed.
    frozen = [a.asnumpy() for a in mine[3:]]
    prepared("BatchNorm", mine, [y, mean, var], ["write", "null", "null"],
             fix_gamma=False).push(is_train=False)
    want = nd.BatchNorm(*mine, fix_gamma=False).asnumpy()
    np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-5, atol=1e-6)
    for a, b in zip(mine[3:], frozen):
        np.testing.assert_array_equal(a.asnumpy(), b)


# --- accumulation, in place, shared chunks -------------------------------------------------
def test_add_accumulates_across_pushes():
    x, w = arr(2, 3), arr(4, 3)
    grad = nd.zeros((2, 4))
    call = prepared("FullyConnected", [nd.array(x, dtype=x.dtype), nd.array(w, dtype=w.dtype)], [grad], ["add"],
                    num_hidden=4, no_bias=True)
    call.push()
    call.push()
    np.testing.assert_allclose(grad.asnumpy(), 2 * (x @ w.T), rtol=1e-5, atol=1e-6)
    push_all([call] * 3)
    np.testing.assert_allclose(grad.asnumpy(), 5 * (x @ w.T), rtol=1e-5, atol=1e-5)


def test_inplace_outputs_are_the_input_memory():
    x = arr(6)
    a = nd.array(x, dtype=x.dtype)
    relu = prepared("relu", [a], [a], ["inplace"])           # the very array
    neg = prepared("negative", [a], [a[0:6]], ["inplace"])    # a view of its chunk
    push_all([neg, relu, neg])
    np.testing.assert_allclose(a.asnumpy(), -np.maximum(-x, 0))
    lhs, rhs = nd.array(x, dtype=x.dtype), nd.array(2 * x)
    add = prepared("elemwise_add", [lhs, rhs], [lhs], ["inplace"])
    for _ in range(3):
        add.push()
    np.testing.assert_allclose(lhs.asnumpy(), 7 * x, rtol=1e-6)


def test_outputs_are_views_into_one_shared_chunk():
    # A memory plan: one chunk, entries at offsets, an op's two outputs in it.
    pool = nd.zeros((40,))
    a, b = pool[0:12].reshape(3, 4), pool[12:24].reshape(3, 4)
    halves = pool[24:30].reshape(3, 2), pool[30:36].reshape(3, 2)
    x = arr(3, 4)
    calls = [prepared("_mul_scalar", [nd.array(x, dtype=x.dtype)], [a], ["write"], scalar=2.0),
             prepared("relu", [a], [b], ["write"]),
             prepared("SliceChannel", [b], list(halves), ["write", "add"], num_outputs=2,
                      axis=1)]
    push_all(calls)
    push_all(calls)
    got = pool.asnumpy()
    r = np.maximum(2 * x, 0)
    np.testing.assert_allclose(got[0:12], (2 * x).ravel(), rtol=1e-6)
    np.testing.assert_allclose(got[12:24], r.ravel(), rtol=1e-6)
    np.testing.assert_allclose(got[24:30], r[:, :2].ravel(), rtol=1e-6)
    np.testing.assert_allclose(got[30:36], 2 * r[:, 2:].ravel(), rtol=1e-6)
    np.testing.assert_array_equal(got[36:], 0)                # nobody writes past the plan


# --- random, Python computes, Custom --------------------------------------------------------
def test_dropout_draws_anew_per_push_and_repeats_per_seed():
    x = nd.ones((50, 40))
    y, mask = nd.empty((50, 40)), nd.empty((50, 40))
    call = prepared("Dropout", [x], [y, mask], ["write", "write"], p=0.5)
    runs = []
    for _ in range(2):
        resource.seed(7)
        run = []
        for _ in range(2):
            call.push(is_train=True)
            run.append(y.asnumpy())
        runs.append(run)
    assert not np.array_equal(runs[0][0], runs[0][1])         # a fresh mask per push
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)                   # seeding reproduces
    assert set(np.unique(runs[0][0])) == {0.0, 2.0}
    resource.seed(7)                                           # the same draws as invoke's
    with training.train_mode():
        np.testing.assert_array_equal(nd.Dropout(x, p=0.5).asnumpy(), runs[0][0])
    call.push(is_train=False)                                  # inference: the identity
    np.testing.assert_array_equal(y.asnumpy(), 1)


@pytest.fixture
def python_op():
    seen = []

    def compute(params, inputs, outputs, reqs):
        ws = params["_workspace"]
        ws[...] = 1
        seen.append((params["_is_train"], tuple(reqs), params["_random_state"], ws.nbytes))
        val = inputs[0] * 2 + (1 if params["_is_train"] else 0) + ws[0]
        for o, r in zip(outputs, reqs):
            if r == "add":
                o += val
            elif r != "null":
                o[...] = val

    registry.register(OpDef("_test_prepared_py", arguments=("data",), outputs=("a", "b"),
                            infer_shape=lambda p, s: [s[0], s[0]],
                            infer_type=lambda p, t: [t[0], t[0]], compute={"cpu": compute},
                            resources=(ResourceRequest.TEMP_SPACE, ResourceRequest.RANDOM),
                            workspace=lambda p, s: 8, random_draws=lambda p, s: 3))
    yield seen
    registry._unregister("_test_prepared_py")


def test_python_compute_gets_reqs_train_flag_random_state_and_workspace(python_op):
    x = arr(4)
    o1, o2 = nd.zeros((4,)) + 5, nd.zeros((4,)) + 5
    call = prepared("_test_prepared_py", [nd.array(x, dtype=x.dtype)], [o1, o2], ["null", "add"])
    assert call.compute_kind == "python"
    call.push(is_train=False)
    call.push(is_train=True)
    nd.waitall()
    np.testing.assert_array_equal(o1.asnumpy(), 5)
    np.testing.assert_allclose(o2.asnumpy(), 5 + (2 * x + 1) + (2 * x + 2), rtol=1e-6)
    assert [s[:2] for s in python_op] == [(False, ("null", "add")), (True, ("null", "add"))]
    (seed0, off0), (seed1, off1) = python_op[0][2], python_op[1][2]
    assert seed0 == seed1 and off1 == off0 + 3                 # reserved per push
    assert python_op[0][3] == 8


@pytest.fixture
def custom_scale():
    class Scale(custom.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0] * (3 if is_train else 2))

    class ScaleProp(custom.CustomOpProp):
        def create_operator(self, ctx, in_shapes, in_dtypes):
            return Scale()

    custom.register("prepared_scale")(ScaleProp)
    yield
    custom._unregister("prepared_scale")


def test_custom_compute_ex_honours_reqs_and_train(custom_scale):
    x = arr(2, 3)
    out = nd.zeros((2, 3)) + 1
    call = PreparedCall("Custom", {"op_type": "prepared_scale"}, [nd.array(x, dtype=x.dtype)], [out], ["add"])
    assert call.compute_kind == "ex"
    call.push(is_train=False)
    call.push(is_train=True)
    np.testing.assert_allclose(out.asnumpy(), 1 + 2 * x + 3 * x, rtol=1e-6)
    PreparedCall("Custom", {"op_type": "prepared_scale"}, [nd.array(x, dtype=x.dtype)], [out],
                 ["write"]).push()
    np.testing.assert_allclose(out.asnumpy(), 2 * x, rtol=1e-6)


# --- chains, interleaving, lifetime ---------------------------------------------------------
def test_push_all_runs_a_chain_of_50_ops_in_order():
    # Two ping-pong buffers: every op overwrites what the one before last
    # read, so a reordering shows in the result.
    x = arr(8, 8)
    bufs = [nd.array(x, dtype=x.dtype), nd.empty((8, 8))]
    calls, want = [], x.copy()
    for i in range(50):
        src, dst = bufs[i % 2], bufs[(i + 1) % 2]
        if i % 3 == 0:
            calls.append(prepared("_plus_scalar", [src], [dst], ["write"], scalar=1.0))
            want = want + np.float32(1)
        elif i % 3 == 1:
            calls.append(prepared("_mul_scalar", [src], [dst], ["write"], scalar=0.5))
            want = want * np.float32(0.5)
        else:
            calls.append(prepared("elemwise_add", [src, src], [dst], ["write"]))
            want = want + want
    push_all(calls)
    np.testing.assert_allclose(bufs[0].asnumpy(), want, rtol=1e-5)
    bufs[0][:] = x                                             # and again, from x
    push_all(calls)
    np.testing.assert_allclose(bufs[0].asnumpy(), want, rtol=1e-5)


def test_many_pushes_interleaved_with_reads_and_writes():
    step = nd.ones((16,))
    acc = nd.zeros((16,))
    call = prepared("elemwise_add", [acc, step], [acc], ["inplace"])
    for i in range(1, 201):
        call.push()
        if i % 10 == 0:
            assert acc.asnumpy()[0] == i
        if i % 50 == 0:
            step[:] = 1.0                                      # a write between pushes
    np.testing.assert_array_equal(acc.asnumpy(), 200)


def test_pushes_keep_the_arrays_alive():
    out = nd.empty((3,))
    call = prepared("_plus_scalar", [nd.array(np.arange(3, dtype=np.float32))], [out],
                    ["write"], scalar=1.0)
    gc.collect()                    # the input's only reference is the call's
    for _ in range(5):
        call.push()
    del call                        # pushed copies hold the chunks until they have run
    gc.collect()
    np.testing.assert_array_equal(out.asnumpy(), [1, 2, 3])


def test_all_null_reqs_push_nothing():
    out = nd.zeros((3,)) + 4
    call = prepared("relu", [nd.array(arr(3))], [out], ["null"])
    push_all([call] * 10)
    np.testing.assert_array_equal(out.asnumpy(), 4)


# --- errors ---------------------------------------------------------------------------------
def test_bad_construction_names_the_op_and_shapes():
    x, w = nd.ones((2, 3)), nd.ones((4, 3))
    with pytest.raises(ShapeError, match=r"FullyConnected: output 0 \('output'\) has shape "
                                         r"\(2, 5\), but inputs of shapes \(2, 3\), \(4, 3\) "
                                         r"give \(2, 4\)"):
        prepared("FullyConnected", [x, w], [nd.empty((2, 5))], ["write"], num_hidden=4,
                 no_bias=True)
    with pytest.raises(TypeInferenceError, match="relu: output 0 .* is float64, but"):
        prepared("relu", [x], [nd.empty((2, 3), dtype="float64")], ["write"])
    with pytest.raises(ValueError, match="relu: 'reqs' must hold 1 value"):
        prepared("relu", [x], [nd.empty((2, 3))], ["write", "write"])
    with pytest.raises(ValueError, match="relu: req 0 must be one of 'null', 'write'"):
        prepared("relu", [x], [nd.empty((2, 3))], ["overwrite"])
    with pytest.raises(ValueError, match="relu: req 0 must be one of"):
        prepared("relu", [x], [nd.empty((2, 3))], [4])
    with pytest.raises(TypeError, match="relu: 'reqs' must be a list"):
        prepared("relu", [x], [nd.empty((2, 3))], "write")
    with pytest.raises(ValueError, match=r"Dropout: 2 output\(s\) \(output, mask\) must be "
                                         r"given, hidden ones included, got 1"):
        prepared("Dropout", [x], [nd.empty((2, 3))], ["write"])
    with pytest.raises(ParamError, match="relu: takes 1 input"):
        prepared("relu", [x, x], [nd.empty((2, 3))], ["write"])
    with pytest.raises(TypeError, match="relu: argument 'data' must be an NDArray"):
        prepared("relu", [np.ones((2, 3))], [nd.empty((2, 3))], ["write"])
    with pytest.raises(ValueError, match="relu: output 'output' is on cpu\\(1\\), the call "
                                         "on cpu\\(0\\)"):
        prepared("relu", [x], [nd.empty((2, 3), ctx=cpu(1))], ["write"])
    with pytest.raises(TypeError, match="push_all: item 1 is a str"):
        push_all([prepared("relu", [x], [nd.empty((2, 3))], ["write"]), "relu"])
    with pytest.raises(ValueError, match="PreparedCall: the call was not constructed"):
        PreparedCall.__new__(PreparedCall).push()


@pytest.fixture
def failing_op():
    # exp's kernel refuses int32 at run time (the registration says nothing).
    registry.register(OpDef("_test_prepared_fails", arguments=("data",),
                            infer_shape=lambda p, s: [s[0]], infer_type=lambda p, t: [t[0]],
                            compute={"cpu": _elemwise_cpu.kernels()["unary"]["exp"]}))
    yield
    registry._unregister("_test_prepared_fails")


def test_a_kernel_error_surfaces_at_the_wait_and_the_engine_goes_on(failing_op):
    bad_in, bad_out = nd.ones((3,), dtype="int32"), nd.empty((3,), dtype="int32")
    fails = prepared("_test_prepared_fails", [bad_in], [bad_out], ["write"])
    after = nd.empty((3,), dtype="int32")
    chain = [fails, prepared("_plus_scalar", [bad_out], [after], ["write"], scalar=1.0)]
    for _ in range(2):
        push_all(chain)
        with pytest.raises(MXNetError, match="_test_prepared_fails: unsupported dtype"):
            after.wait_to_read()                # downstream of the failure
        bad_out.wait_to_read()                  # raised once, cleared everywhere (MXNet 1.9)
    out = nd.empty((3,))
    prepared("_plus_scalar", [nd.ones((3,))], [out], ["write"], scalar=1.0).push()
    np.testing.assert_array_equal(out.asnumpy(), 2)          # still usable
    # A failing op whose reqs are all null is never run.
    prepared("_test_prepared_fails", [bad_in], [bad_out], ["null"]).push()
    bad_out.wait_to_read()


# --- GPU ------------------------------------------------------------------------------------
@pytest.mark.gpu
def test_gpu_prepared_calls_match_the_cpu():
    from mx_engine import gpu
    host = [arr(2, 3, 9, 9), arr(4, 3, 3, 3), arr(4), arr(5, 196)]
    results = {}
    for ctx in (cpu(0), gpu(0)):
        x, w, b, w_fc = [nd.array(v, ctx=ctx) for v in host]
        conv = nd.zeros((2, 4, 7, 7), ctx=ctx) + 1
        relu = nd.empty((2, 4, 7, 7), ctx=ctx)
        fc = nd.empty((2, 5), ctx=ctx)
        y, mask = nd.empty((2, 4, 7, 7), ctx=ctx), nd.empty((2, 4, 7, 7), ctx=ctx)
        calls = [prepared("Convolution", [x, w, b], [conv], ["add"], kernel=(3, 3),
                          num_filter=4),
                 prepared("relu", [conv], [relu], ["write"]),
                 prepared("FullyConnected", [relu, w_fc], [fc], ["write"], num_hidden=5,
                          no_bias=True),
                 prepared("Dropout", [relu], [y, mask], ["write", "null"], p=0.5)]
        assert calls[0].compute_kind == ("native" if ctx == cpu(0) else "python")
        push_all(calls, is_train=False)
        push_all(calls[:3], is_train=True)
        results[ctx] = [conv.asnumpy(), relu.asnumpy(), fc.asnumpy(), y.asnumpy()]
    for c, g in zip(results[cpu(0)], results[gpu(0)]):
        np.testing.assert_allclose(g, c, rtol=1e-4, atol=1e-4)
    # In training the GPU draws its own masks: a fresh one per push.
    x = nd.ones((64, 64), ctx=gpu(0))
    y, mask = nd.empty((64, 64), ctx=gpu(0)), nd.empty((64, 64), ctx=gpu(0))
    drop = prepared("Dropout", [x], [y, mask], ["write", "write"], p=0.5)
    drop.push(is_train=True)
    first = y.asnumpy()
    drop.push(is_train=True)
    assert not np.array_equal(first, y.asnumpy())
    assert set(np.unique(first)) == {0.0, 2.0}
