"""mx.profiler with real operators: the engine names each operator event,
the pooled allocator reports device memory, scope names what mx.nd pushes."""
import json

import numpy as np
import pytest

import mx
from mx import profiler


@pytest.fixture
def fresh(tmp_path):
    mx.nd.waitall()
    profiler.set_state("stop")
    profiler.set_config(filename=str(tmp_path / "earlier.json"), profile_all=False,
                        profile_symbolic=True, profile_imperative=True, profile_memory=True,
                        continuous_dump=False, aggregate_stats=True)
    profiler.set_state("run")                # dump() needs a profiler that has run
    profiler.dump(finished=True)
    profiler.dumps(reset=True)
    profiler.set_config(filename=str(tmp_path / "trace.json"))
    yield tmp_path / "trace.json"
    profiler.set_state("stop")
    profiler.dumps(reset=True)


def _ops(path):
    return [e for e in json.loads(path.read_text())["traceEvents"] if e["ph"] == "X"]


def test_operator_events_and_counts(fresh):
    a = mx.nd.array(np.ones((32, 32), np.float32))
    mx.nd.waitall()
    profiler.set_state("run")
    for _ in range(4):
        b = mx.nd.dot(a, a)
        c = mx.nd.relu(b + 1)
    mx.nd.waitall()          # functions still running at 'stop' are not recorded
    profiler.set_state("stop")
    profiler.dump()
    names = [e["name"] for e in _ops(fresh)]
    assert names.count("dot") == 4 and names.count("relu") == 4
    assert names.count("_plus_scalar") == 4
    stats = json.loads(profiler.dumps(format="json"))["Time"]["operator"]
    assert {k: stats[k]["Count"] for k in ("dot", "relu", "_plus_scalar")} == \
        {"dot": 4, "relu": 4, "_plus_scalar": 4}
    np.testing.assert_allclose(c.asnumpy(), 33.0)


def test_memory_use_is_recorded_from_the_pool(fresh):
    profiler.set_state("run")
    x = mx.nd.zeros((1000,))                  # 4000 bytes more in use on cpu/0
    x.wait_to_read()
    del x
    mx.nd.waitall()
    profiler.set_state("stop")
    profiler.dump()
    trace = json.loads(fresh.read_text())["traceEvents"]
    mem = [e for e in trace if e["ph"] == "C" and e["cat"] == "Device Storage"]
    values = [e["args"]["Memory: cpu/0"] for e in mem]
    assert len(values) >= 2 and max(values) - values[-1] >= 4000
    table = profiler.dumps()
    assert "Device Storage" in table and "Memory: cpu/0" in table


def test_no_memory_events_without_profile_memory(fresh):
    profiler.set_config(profile_memory=False)
    profiler.set_state("run")
    mx.nd.ones((100,)).wait_to_read()
    mx.nd.waitall()
    profiler.set_state("stop")
    profiler.dump()
    trace = json.loads(fresh.read_text())["traceEvents"]
    assert not [e for e in trace if e.get("cat") == "Device Storage"]
    assert "_ones" in [e["name"] for e in trace if e["ph"] == "X"]


def test_scope_names_nd_operators(fresh):
    a = mx.nd.ones((4,))
    mx.nd.waitall()
    profiler.set_state("run")
    with profiler.scope("fwd"):
        b = mx.nd.exp(a)
    b.wait_to_read()
    profiler.set_state("stop")
    assert "fwd:exp" in profiler.aggregate()
    assert "exp" not in profiler.aggregate()


def _executor():
    x = mx.sym.var("x")
    y = mx.sym.sigmoid(mx.sym.relu(x))
    return y.bind(mx.cpu(), {"x": mx.nd.ones((4, 4))}, args_grad={"x": mx.nd.zeros((4, 4))})


def _run_both(ex):
    """An imperative exp and an executor's relu/sigmoid forward and backward."""
    a = mx.nd.ones((4, 4))
    mx.nd.waitall()
    profiler.set_state("run")
    b = mx.nd.exp(a)
    ex.forward(is_train=True)
    ex.backward(mx.nd.ones((4, 4)))
    mx.nd.waitall()
    profiler.set_state("stop")
    return b


def _recorded(**flags):
    ex = _executor()
    profiler.set_config(profile_api=False, **flags)
    _run_both(ex)
    return set(profiler.aggregate(reset=True))


def test_symbolic_and_imperative_are_told_apart(fresh):
    symbolic = _recorded(profile_symbolic=True, profile_imperative=False)
    imperative = _recorded(profile_symbolic=False, profile_imperative=True)
    both = _recorded(profile_symbolic=True, profile_imperative=True)
    # The executor's passes (relu, sigmoid and their gradients' ops) are
    # symbolic; exp and the ones given to backward() are imperative.
    assert {"relu", "sigmoid"} <= symbolic and not {"exp", "_ones"} & symbolic
    assert {"exp", "_ones"} <= imperative and not {"relu", "sigmoid"} & imperative
    assert both == symbolic | imperative and not symbolic & imperative
    assert len(symbolic) > 2                   # the backward pass's ops too
    assert _recorded(profile_symbolic=False, profile_imperative=False) == set()


def test_profile_all_records_both_whatever_the_others_say(fresh):
    names = _recorded(profile_all=True, profile_symbolic=False, profile_imperative=False)
    assert {"exp", "_ones", "relu", "sigmoid"} <= names


def test_profile_api_times_the_calls_under_mxnets_c_api_names(fresh):
    ex = _executor()
    a = mx.nd.ones((4, 4))
    mx.nd.waitall()
    profiler.set_config(profile_api=True, profile_symbolic=False, profile_imperative=False,
                        profile_memory=False)
    profiler.set_state("run")
    b = mx.nd.dot(a, a) + 1                    # two operator calls
    b.asnumpy()
    c = mx.nd.array(np.ones(3))
    c.wait_to_read()
    ex.forward(is_train=True)
    g = mx.nd.ones((4, 4))                     # a third
    ex.backward(g)
    mx.nd.waitall()
    profiler.set_state("stop")
    api = json.loads(profiler.dumps(format="json"))["Time"]["MXNET_C_API"]
    counts = {k: v["Count"] for k, v in api.items()}
    # A fourth: backward() copies g into the executor's head gradient.
    assert counts["MXImperativeInvokeEx"] == 4, counts
    for name in ("MXNDArraySyncCopyToCPU", "MXNDArraySyncCopyFromCPU", "MXNDArrayWaitToRead",
                 "MXExecutorForward", "MXExecutorBackwardEx", "MXNDArrayWaitAll"):
        assert counts[name] == 1, name
    calls = sum(counts[k] for k in counts if k.startswith("MX") and k != "MXNet C API Calls"
                and k != "MXNet C API Concurrency")
    assert counts["MXNet C API Calls"] == calls
    assert counts["MXNet C API Concurrency"] == 2 * calls
    # The trace shows them as MXNet writes them: async begin/end pairs in
    # the domain's category, with the call counters.
    profiler.dump()
    trace = json.loads(fresh.read_text())["traceEvents"]
    fwd = [e for e in trace if e.get("name") == "MXExecutorForward"]
    assert [e["ph"] for e in fwd] == ["b", "e"] and {e["cat"] for e in fwd} == {"MXNET_C_API"}
    assert fwd[0]["id"] == fwd[1]["id"] and fwd[0]["ts"] <= fwd[1]["ts"]
    assert any(e["ph"] == "C" and e["name"] == "MXNet C API Calls" for e in trace)
    assert not [e for e in trace if e.get("cat") == "operator"]


def test_no_api_events_without_profile_api(fresh):
    profiler.set_config(profile_api=False)
    profiler.set_state("run")
    mx.nd.ones((3,)).asnumpy()
    profiler.set_state("stop")
    assert "MXNET_C_API" not in json.loads(profiler.dumps(format="json"))["Time"]


def test_api_nested_in_autograd_backward(fresh):
    x = mx.nd.ones((3,))
    x.attach_grad()
    profiler.set_config(profile_api=True)
    profiler.set_state("run")
    with mx.autograd.record():
        y = (x * 2).sum()
    y.backward()
    x.grad.wait_to_read()
    profiler.set_state("stop")
    api = json.loads(profiler.dumps(format="json"))["Time"]["MXNET_C_API"]
    assert api["MXAutogradBackwardEx"]["Count"] == 1
    np.testing.assert_allclose(x.grad.asnumpy(), 2.0)
