"""The 'nccl' store: what create('nccl') says when something is missing,
its argument checks, its paths without NCCL (single values, CPU arrays),
and -- gpu-marked, where CuPy's NCCL loads -- sums, broadcasts, pushpull,
an updater and key lists on 1 and all visible GPUs against NumPy."""
import sys
import warnings

import numpy as np
import pytest

import mx_ndarray as nd
import mx_kvstore as kvs
from mx_engine import cpu, gpu
from mx_kvstore import KVStoreError, _nccl_comm, nccl as nccl_store


def _nccl_missing():
    """Why NCCL cannot run here, or None (checked with CuPy directly)."""
    try:
        import cupy
        with warnings.catch_warnings():       # CuPy's own note on a missing libnccl
            warnings.simplefilter("ignore")
            from cupy.cuda import nccl
    except Exception as exc:
        return f"CuPy's NCCL bindings do not import ({exc})"
    if not nccl.available:
        return "CuPy cannot load the NCCL library (pip install nvidia-nccl-cu12)"
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return "no CUDA device"
    except Exception as exc:
        return f"no CUDA device ({exc})"
    return None


@pytest.fixture
def cpu_store(monkeypatch):
    """A 'nccl' store made without NCCL: the checks and the paths that need
    no NCCL call (CPU arrays, single values) run without a GPU."""
    monkeypatch.setattr(nccl_store, "require_nccl", lambda api: None)
    return kvs.create("nccl")


# --- create('nccl') without what it needs ------------------------------------------------

def test_create_names_what_is_missing_here():
    why = _nccl_missing()
    if why is None:
        kv = kvs.create("nccl")
        assert kv.type == "nccl" and kv.rank == 0 and kv.num_workers == 1
        return
    with pytest.raises(KVStoreError, match="'nccl' needs NCCL and a CUDA GPU; missing: .*"
                                           "mx-kvstore\\[nccl\\].*'device'"):
        kvs.create("nccl")


def test_create_without_cupy(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)     # import cupy raises ImportError
    with pytest.raises(KVStoreError, match="needs CuPy, which does not import.*cupy-cuda12x"):
        kvs.create("nccl")


def test_create_without_nccl_library_or_gpu(monkeypatch):
    cupy = pytest.importorskip("cupy")
    from cupy.cuda import nccl

    def no_device():
        raise RuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")
    monkeypatch.setattr(nccl, "available", False)
    monkeypatch.setattr(cupy.cuda.runtime, "getDeviceCount", no_device)
    with pytest.raises(KVStoreError) as info:
        kvs.create("nccl")
    msg = str(info.value)
    assert "the NCCL library does not load" in msg
    assert "a CUDA GPU: CUDA reports RuntimeError: cudaErrorNoDevice" in msg
    monkeypatch.setattr(cupy.cuda.runtime, "getDeviceCount", lambda: 0)
    with pytest.raises(KVStoreError, match="CUDA sees none"):
        kvs.create("nccl")


def test_module_imports_without_cupy(tmp_path):
    """mx_kvstore.nccl imports (and create('nccl') fails cleanly) with CuPy
    blocked, in a fresh interpreter."""
    import subprocess
    code = ("import sys; sys.modules['cupy'] = None\n"
            "import mx_kvstore, mx_kvstore.nccl\n"
            "try:\n    mx_kvstore.create('nccl')\n"
            "except mx_kvstore.KVStoreError as e:\n    print('refused:', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "refused:" in out.stdout and "needs CuPy" in out.stdout


# --- argument checks (no GPU needed) ------------------------------------------------------

def test_type_rank_workers_and_no_compression(cpu_store):
    assert cpu_store.type == "nccl" and cpu_store.rank == 0 and cpu_store.num_workers == 1
    with pytest.raises(KVStoreError, match="not supported for this type of kvstore"):
        cpu_store.set_gradient_compression({"type": "2bit"})


def test_refuses_sparse_and_unsupported_dtypes(cpu_store):
    rsp = nd.zeros((4, 2)).tostype("row_sparse")
    with pytest.raises(KVStoreError, match="init: the 'nccl' store takes dense arrays only; "
                                           "key 3 has a row_sparse one"):
        cpu_store.init(3, rsp)
    with pytest.raises(KVStoreError, match="init: key 'w' has dtype int8; the 'nccl' store "
                                           "takes float16, float32, float64, uint8, int32"):
        cpu_store.init("w", nd.zeros((2,), dtype="int8"))
    # A refused init leaves the key free.
    cpu_store.init(3, nd.zeros((4, 2)))
    with pytest.raises(KVStoreError, match="push: the 'nccl' store takes dense arrays only"):
        cpu_store.push(3, [nd.zeros((4, 2)), rsp])
    with pytest.raises(KVStoreError, match="pull: the 'nccl' store takes dense arrays only"):
        cpu_store.pull(3, out=[rsp], ignore_sparse=False)
    with pytest.raises(KVStoreError, match="row_sparse_pull"):
        cpu_store.row_sparse_pull(3, out=rsp, row_ids=nd.array([0]))


def test_cpu_arrays_are_summed_and_copied(cpu_store):
    """Values NCCL cannot take (CPU arrays) are summed as the 'device' store does."""
    rng = np.random.default_rng(0)
    x = [rng.standard_normal((3, 5)).astype(np.float32) for _ in range(3)]
    cpu_store.init([1, 2], [nd.zeros((3, 5)), nd.zeros((3, 5))])
    cpu_store.push([1, 2], [[nd.array(a, ctx=cpu(i)) for i, a in enumerate(x)],
                            nd.array(x[0])])
    outs = [nd.zeros((3, 5), ctx=cpu(i)) for i in range(2)]
    cpu_store.pull(1, out=outs)
    for o in outs:
        np.testing.assert_allclose(o.asnumpy(), x[0] + x[1] + x[2], rtol=1e-6)
    out = nd.zeros((3, 5))
    cpu_store.pushpull(2, [nd.array(x[1], ctx=cpu(1)), nd.array(x[2])], out=out)
    np.testing.assert_allclose(out.asnumpy(), x[1] + x[2], rtol=1e-6)


def test_distinct_gpus_needs_several_dense_arrays_one_per_gpu():
    assert _nccl_comm.distinct_gpus([nd.zeros((2,))]) is None
    assert _nccl_comm.distinct_gpus([nd.zeros((2,)), nd.zeros((2,), ctx=cpu(1))]) is None


# --- on GPUs, with NCCL --------------------------------------------------------------------

def _gpu_store():
    why = _nccl_missing()
    if why is not None:
        pytest.skip(f"nccl: {why}")
    return kvs.create("nccl")


def _gpu_counts():
    import cupy
    n = cupy.cuda.runtime.getDeviceCount()
    return sorted({1, n})


TOL = {"float32": dict(rtol=1e-5, atol=1e-5), "float16": dict(rtol=1e-2, atol=1e-2)}


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_push_pull_pushpull_on_gpus(dtype):
    kv = _gpu_store()
    rng = np.random.default_rng(1)
    for n in _gpu_counts():
        ctxs = [gpu(i) for i in range(n)]
        shape = (257, 33)
        key = f"w{n}"
        init = rng.standard_normal(shape).astype(dtype)
        kv.init(key, nd.array(init, dtype=dtype))
        outs = [nd.zeros(shape, ctx=c, dtype=dtype) for c in ctxs]
        kv.pull(key, out=outs)                       # broadcast of the initial value
        for o in outs:
            np.testing.assert_array_equal(o.asnumpy(), init)
        vals = [rng.standard_normal(shape).astype(dtype) for _ in ctxs]
        want = np.sum([v.astype(np.float64) for v in vals], axis=0)
        kv.push(key, [nd.array(v, ctx=c, dtype=dtype) for v, c in zip(vals, ctxs)])
        kv.pull(key, out=outs)
        for o in outs:
            assert o.dtype == np.dtype(dtype)
            np.testing.assert_allclose(o.asnumpy().astype(np.float64), want, **TOL[dtype])
        # pushpull into outs, then in place; the store keeps the sum.
        grads = [nd.array(v, ctx=c, dtype=dtype) for v, c in zip(vals, ctxs)]
        kv.pushpull(key, grads, out=outs)
        kv.pushpull(key, grads)
        for arr in outs + grads:
            np.testing.assert_allclose(arr.asnumpy().astype(np.float64), want, **TOL[dtype])
        last = nd.zeros(shape, ctx=ctxs[-1], dtype=dtype)
        kv.pull(key, out=last)
        np.testing.assert_allclose(last.asnumpy().astype(np.float64), want, **TOL[dtype])


@pytest.mark.gpu
def test_key_lists_and_an_updater_on_gpus():
    kv = _gpu_store()
    rng = np.random.default_rng(2)
    for n in _gpu_counts():
        ctxs = [gpu(i) for i in range(n)]
        keys = [10 * n + k for k in range(3)]
        shapes = [(5,), (64, 3), (1000,)]
        weights = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        kv.init(keys, [nd.array(w) for w in weights])
        calls = []

        def update(key, merged, stored):
            calls.append((key, merged.context))
            stored -= merged * 0.5

        kv._set_updater(update)
        grads = [[rng.standard_normal(s).astype(np.float32) for _ in ctxs] for s in shapes]
        kv.push(keys, [[nd.array(g, ctx=c) for g, c in zip(gs, ctxs)] for gs in grads])
        outs = [[nd.zeros(s, ctx=c) for c in ctxs] for s in shapes]
        kv.pull(keys, out=outs)
        for w, gs, os_ in zip(weights, grads, outs):
            want = w - 0.5 * np.sum(gs, axis=0)
            for o in os_:
                np.testing.assert_allclose(o.asnumpy(), want, rtol=1e-5, atol=1e-5)
        assert [k for k, _ in calls] == keys
        assert all(c.device_type == "gpu" for _, c in calls)
        kv._set_updater(None)


@pytest.mark.gpu
def test_clique_collectives_on_one_gpu():
    """The engine function and the NCCL calls on a one-rank clique: the
    collectives run after the writes pushed before them, and readers after."""
    if _nccl_missing() is not None:
        pytest.skip(f"nccl: {_nccl_missing()}")
    from cupy.cuda import nccl
    clique = _nccl_comm.Clique(nccl, [0])
    for dtype in ("float32", "float16", "float64", "int32", "int64", "uint8"):
        src = nd.ones((1000,), ctx=gpu(0), dtype=dtype)
        src *= 3                                   # pending when the group is pushed
        red, bc, ar = (nd.zeros((1000,), ctx=gpu(0), dtype=dtype) for _ in range(3))
        calls = [clique.reduce(0, src, red, 0), clique.all_reduce(0, src, ar)]
        clique.push_group(calls, [src], [red, ar], 0, "test")
        clique.push_group([clique.bcast(0, red, 0)], [red], [], 0, "test")
        bc[:] = red + 1
        for arr, want in ((red, 3), (ar, 3), (bc, 4)):
            np.testing.assert_array_equal(arr.asnumpy(), np.full(1000, want, dtype))


# --- the engine function (host arrays stand in for device memory) ---------------------

def test_push_collective_runs_in_order_and_reports_errors():
    """The pushed function runs after the pending writes of what it reads,
    before later readers of what it writes, and its exception is raised at
    the next wait on an array it writes."""
    import ctypes
    from mx_kvstore._nccl_engine import device_pointer, push_collective
    src = nd.ones((1000,))
    src *= 7                                      # pending when the function is pushed
    dst = nd.zeros((1000,))
    nbytes = 1000 * 4

    def copy():
        ctypes.memmove(device_pointer(dst), device_pointer(src), nbytes)
    push_collective(copy, [src], [dst], 0, "test_copy")
    later = dst + 1                               # a reader pushed after it
    np.testing.assert_array_equal(later.asnumpy(), np.full(1000, 8, np.float32))
    view = src[10:20]                             # an offset view points at its first element
    assert device_pointer(view) == device_pointer(src) + 40

    def fail():
        raise RuntimeError("ncclUnhandledCudaError")
    push_collective(fail, [src], [dst], 0, "test_fail")
    with pytest.raises(Exception, match="ncclUnhandledCudaError"):
        dst.asnumpy()
    with pytest.raises(TypeError, match="push_collective: expected NDArrays, got int"):
        push_collective(copy, [3], [], 0, "bad")
    with pytest.raises(TypeError, match="must be callable"):
        push_collective(None, [], [], 0, "bad")
