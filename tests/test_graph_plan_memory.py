"""PlanMemory as the MXNet paper claims it: in-place plus sharing cut memory
at least 2x for training and 4x for inference against one buffer per entry,
on a deep MLP and a small convnet; results identical with planning off; the
in-place switch and the sharing switch change the plan; branches that share
no memory overlap in the engine's trace."""
import json

import numpy as np
import pytest

import mx
from mx_engine import profiler
from mx_graph.passes import plan_memory as pm


def deep_mlp(layers=8, hidden=256):
    net = mx.sym.Variable("data")
    for i in range(layers):
        net = mx.sym.FullyConnected(net, num_hidden=hidden, name=f"fc{i}")
        net = mx.sym.Activation(net, act_type="relu", name=f"relu{i}")
    net = mx.sym.FullyConnected(net, num_hidden=10, name="out_fc")
    return mx.sym.SoftmaxOutput(net, name="out")


def small_convnet():
    # Two stages of two conv-BatchNorm-relu blocks, each stage pooled.
    net = mx.sym.Variable("data")
    for i, filters in enumerate((8, 16)):
        for j in range(2):
            net = mx.sym.Convolution(net, kernel=(3, 3), pad=(1, 1), num_filter=filters,
                                     name=f"conv{i}_{j}")
            net = mx.sym.BatchNorm(net, name=f"bn{i}_{j}")
            net = mx.sym.Activation(net, act_type="relu", name=f"relu{i}_{j}")
        net = mx.sym.Pooling(net, kernel=(2, 2), stride=(2, 2), pool_type="max",
                             name=f"pool{i}")
    net = mx.sym.Flatten(net)
    net = mx.sym.FullyConnected(net, num_hidden=32, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu_fc")
    net = mx.sym.FullyConnected(net, num_hidden=10, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="out")


NETS = {"deep_mlp": (deep_mlp, {"data": (32, 64)}),
        "convnet": (small_convnet, {"data": (8, 3, 16, 16)})}


@pytest.mark.parametrize("net", sorted(NETS))
@pytest.mark.parametrize("grad_req,factor", [("write", 2), ("null", 4)])
def test_planning_cuts_memory(net, grad_req, factor):
    build, shapes = NETS[net]
    plan = build().simple_bind(mx.cpu(), grad_req=grad_req, **shapes).memory_plan
    assert plan["naive_bytes"] >= factor * plan["planned_bytes"], plan
    assert plan["num_inplace"] > 0


def _train_steps(sym, shapes, steps=3):
    rng = np.random.default_rng(0)
    ex = sym.simple_bind(mx.cpu(), **shapes)
    for name, arr in ex.arg_dict.items():
        if name.endswith("label"):
            arr[:] = rng.integers(0, 10, arr.shape)
        else:
            arr[:] = rng.uniform(-0.3, 0.3, arr.shape)
    for arr in ex.aux_dict.values():
        arr[:] = 1.0
    for _ in range(steps):
        ex.forward(is_train=True)
        ex.backward()
        for name, (w, g) in zip(sym.list_arguments(), zip(ex.arg_arrays, ex.grad_arrays)):
            if name != "data" and not name.endswith("label"):
                w[:] -= 0.1 * g
    out = [o.asnumpy() for o in ex.outputs]
    grads = {n: g.asnumpy() for n, g in ex.grad_dict.items()}
    return out, grads, ex.memory_plan


@pytest.mark.parametrize("net", sorted(NETS))
def test_results_identical_with_planning_off(net, monkeypatch):
    build, shapes = NETS[net]
    planned = _train_steps(build(), shapes)
    monkeypatch.setenv("MXNET_EXEC_ENABLE_INPLACE", "0")
    monkeypatch.setenv("MX_EXEC_ENABLE_SHARING", "0")
    unplanned = _train_steps(build(), shapes)
    assert unplanned[2]["planned_bytes"] == unplanned[2]["naive_bytes"]
    assert unplanned[2]["num_inplace"] == 0
    for a, b in zip(planned[0], unplanned[0]):
        np.testing.assert_array_equal(a, b)
    for name in planned[1]:
        np.testing.assert_array_equal(planned[1][name], unplanned[1][name], err_msg=name)


@pytest.mark.parametrize("net", sorted(NETS))
def test_switches_change_the_plan(net, monkeypatch):
    build, shapes = NETS[net]
    full = build().simple_bind(mx.cpu(), **shapes).memory_plan
    monkeypatch.setenv("MXNET_EXEC_ENABLE_INPLACE", "0")
    no_inplace = build().simple_bind(mx.cpu(), **shapes).memory_plan
    assert no_inplace["num_inplace"] == 0 and full["num_inplace"] > 0
    assert no_inplace["planned_bytes"] > full["planned_bytes"]
    monkeypatch.setenv("MXNET_EXEC_ENABLE_INPLACE", "1")
    monkeypatch.setenv("MX_EXEC_ENABLE_SHARING", "0")
    no_sharing = build().simple_bind(mx.cpu(), **shapes).memory_plan
    assert no_sharing["planned_bytes"] > full["planned_bytes"]
    assert no_sharing["planned_bytes"] < no_sharing["naive_bytes"]   # in-place still on


def test_plan_never_shares_live_entries():
    """Two entries on one storage are never live at the same time."""
    sym = deep_mlp(layers=4, hidden=32)
    ex = sym.simple_bind(mx.cpu(), data=(4, 8))
    g = ex._bound.graph
    idx = g.indexed
    sid = g.attrs["storage_id"]
    first, last = {}, {}
    for nid in range(idx.num_nodes):
        for e in range(idx.node_row_ptr[nid], idx.node_row_ptr[nid + 1]):
            first[e] = last[e] = nid
        for e in idx.inputs[nid]:
            last[e] = max(last[e], nid)
    inplace = g.attrs["inplace_entries"]
    by_storage = {}
    for e, s in enumerate(sid):
        if s >= 0:
            by_storage.setdefault(s, []).append(e)
    for s, entries in by_storage.items():
        entries.sort(key=lambda e: first[e])
        for a, b in zip(entries, entries[1:]):
            # b starts after a's last read, or takes a over in place there
            assert first[b] > last[a] or (b in inplace and first[b] == last[a]), (s, a, b)


def test_sharing_switch_reads_environment(monkeypatch):
    assert pm.sharing_enabled()
    monkeypatch.setenv("MX_EXEC_ENABLE_SHARING", "0")
    assert not pm.sharing_enabled()
    monkeypatch.setenv("MXNET_EXEC_ENABLE_INPLACE", "false")
    assert not pm.inplace_enabled()


def test_parallel_branches_overlap_in_trace(tmp_path):
    data = mx.sym.Variable("data")
    branches = [mx.sym.FullyConnected(data, num_hidden=1024, name=f"branch{i}")
                for i in range(2)]
    net = mx.sym.Group(branches)
    ex = net.simple_bind(mx.cpu(), grad_req="null", data=(512, 1024))
    ex.forward()
    mx.nd.waitall()
    profiler.set_config(filename=str(tmp_path / "earlier.json"), profile_all=True)
    profiler.set_state("run")                # dump() needs a profiler that has run
    profiler.dump(finished=True)
    profiler.set_config(filename=str(tmp_path / "trace.json"))
    profiler.set_state("run")
    try:
        for _ in range(5):
            ex.forward()
        mx.nd.waitall()
    finally:
        profiler.set_state("stop")
    profiler.dump()
    events = [e for e in json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
              if e["ph"] == "X" and e["name"] == "FullyConnected"]
    assert len(events) == 10
    spans = sorted((e["ts"], e["ts"] + e["dur"], e["tid"]) for e in events)
    overlapping = any(a[1] > b[0] and a[2] != b[2] for a, b in zip(spans, spans[1:]))
    assert overlapping, "no two FullyConnected branches ran at the same time"
