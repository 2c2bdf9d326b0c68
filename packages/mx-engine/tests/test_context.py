import pickle
import threading

import pytest

import mx_engine
from mx_engine import Context, cpu, cpu_pinned, current_context, gpu


def test_repr_equality_hash():
    assert repr(cpu()) == "cpu(0)" and str(gpu(1)) == "gpu(1)"
    assert repr(cpu_pinned(2)) == "cpu_pinned(2)"
    assert cpu(0) == Context("cpu", 0) == Context(cpu(0))
    assert cpu(0) != cpu(1) and cpu(0) != gpu(0) and cpu(0) != "cpu(0)"
    assert len({cpu(0), Context("cpu"), gpu(0), gpu(0)}) == 2
    assert gpu(3).device_type == "gpu" and gpu(3).device_id == 3
    assert gpu(3).device_typeid == 2 and cpu().device_typeid == 1
    assert Context.devtype2str[3] == "cpu_pinned" and Context.devstr2type["gpu"] == 2


def test_pickle_round_trip():
    assert pickle.loads(pickle.dumps(gpu(2))) == gpu(2)


def test_default_context_is_per_thread_and_nests():
    assert current_context() == cpu(0)
    seen = []
    with gpu(1):
        assert current_context() == gpu(1)
        with cpu(2):
            assert current_context() == cpu(2)
        assert current_context() == gpu(1)
        t = threading.Thread(target=lambda: seen.append(current_context()))
        t.start()
        t.join()
    assert current_context() == cpu(0)
    assert seen == [cpu(0)]


@pytest.mark.parametrize("args, exc, text", [
    (("tpu",), ValueError, "'device_type' must be one of"),
    ((3.5,), TypeError, "'device_type'"),
    (("cpu", -1), ValueError, "'device_id' must be in [0, 64)"),
    (("gpu", 64), ValueError, "got 64"),
    (("cpu", "0"), TypeError, "'device_id' must be an int"),
])
def test_bad_context(args, exc, text):
    with pytest.raises(exc, match=None) as info:
        Context(*args)
    assert text in str(info.value)


def test_num_gpus_without_cupy_is_an_int():
    assert isinstance(mx_engine.num_gpus(), int)
