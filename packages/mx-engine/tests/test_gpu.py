"""GPU run contexts: streams through CuPy (skipped without a CUDA device)."""
import pytest

from mx_engine import MXNetError, cpu, engine, gpu


def test_cpu_run_context_has_no_stream():
    seen = []
    engine.push_sync(lambda rc: seen.append(rc.stream), cpu(), mutate_vars=[engine.new_variable()])
    engine.wait_for_all()
    assert seen == [None]


def test_gpu_stream_without_cupy_is_a_clear_error():
    try:
        import cupy  # noqa: F401
        pytest.skip("CuPy is installed")
    except ImportError:
        pass
    v = engine.new_variable()
    engine.push_sync(lambda rc: rc.stream, gpu(0), mutate_vars=[v])
    with pytest.raises(MXNetError, match=r"gpu\(0\): a GPU stream needs CuPy"):
        engine.wait_for_var(v)


@pytest.mark.gpu
def test_gpu_workers_launch_on_their_own_stream_and_sync():
    import cupy
    x = cupy.arange(1 << 20, dtype=cupy.float32)
    v = engine.new_variable()
    streams = []

    def scale(rc):
        streams.append(rc.stream.ptr)
        with rc.stream:
            x[...] = x * 2

    for _ in range(3):
        engine.push_sync(scale, gpu(0), mutate_vars=[v])
    engine.wait_for_var(v)
    assert float(x[10]) == 80.0          # each function's work was complete
    assert streams[0] != cupy.cuda.Stream.null.ptr
    out = []
    engine.push_sync(lambda rc: out.append(rc.stream.ptr), gpu(0), mutate_vars=[v],
                     prop=engine.FnProperty.COPY_FROM_GPU)
    engine.wait_for_all()
    assert out[0] not in streams          # copy workers have streams of their own
