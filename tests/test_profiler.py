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
