import gc
import random
import subprocess
import sys
import threading

import numpy as np
import pytest

import mx_storage as st
from mx_engine import MXNetError, cpu, cpu_pinned, gpu
from mx_storage import _storage


@pytest.mark.parametrize("size", [1, 63, 64, 65, 1000, 4096, 1 << 20, (1 << 20) + 3])
def test_host_blocks_are_64_byte_aligned_and_usable(size):
    h = st.alloc(size, cpu())
    assert h.ptr % 64 == 0 and h.size == size and h.ctx == cpu()
    a = st.as_numpy(h, (size,), np.uint8)
    a[:] = np.arange(size) % 251
    assert (st.as_numpy(h, (size,), np.uint8) == np.arange(size) % 251).all()
    st.free(h)
    assert not h.live


def test_zero_size_is_a_null_block():
    h = st.alloc(0, cpu())
    assert h.ptr == 0
    st.free(h)


def test_a_freed_block_is_reused_without_a_system_call():
    h = st.alloc(10_000, cpu())
    first = h.ptr
    st.free(h)
    before = st.memory_stats(cpu())
    h2 = st.alloc(10_000, cpu())
    after = st.memory_stats(cpu())
    assert h2.ptr == first
    assert after["reused"] == before["reused"] + 1
    assert after["system_allocations"] == before["system_allocations"]
    assert before["cached"] == 10_048 and after["cached"] == 0


def test_naive_buckets_are_exact_sizes():
    a = st.alloc(1000, cpu())
    first = a.ptr
    st.free(a)
    b = st.alloc(2000, cpu())             # another size: not served by the 1000-byte block
    assert b.ptr != first
    assert st.memory_stats(cpu())["in_use"] == 2048


@pytest.mark.parametrize("size, bucket", [(1, 64), (100, 128), (3000, 4096), (4096, 4096),
                                          (4097, 8192), (10_000, 12_288), (20_000, 20_480)])
def test_round_buckets_are_powers_of_two_then_linear(size, bucket):
    st.set_pool_type("cpu", "Round", round_cutoff=12)        # linear steps of 4 KiB
    h = st.alloc(size, cpu())
    stats = st.memory_stats(cpu())
    assert stats["pool_type"] == "Round" and stats["in_use"] == bucket
    st.free(h)
    h2 = st.alloc(bucket - 1 if bucket - 1 > bucket // 2 else bucket, cpu())
    assert st.memory_stats(cpu())["reused"] >= 1                # same bucket, reused
    st.free(h2)


def test_unpooled_returns_blocks_to_the_system():
    st.set_pool_type("cpu", "Unpooled")
    before = st.memory_stats(cpu())["system_allocations"]
    for _ in range(3):
        st.free(st.alloc(5000, cpu()))
    stats = st.memory_stats(cpu())
    assert stats["cached"] == 0 and stats["system_allocations"] == before + 3


def test_direct_free_and_release_all():
    keep = st.alloc(4096, cpu())
    a, b = st.alloc(8192, cpu()), st.alloc(8192, cpu())
    st.direct_free(a)
    assert st.memory_stats(cpu())["cached"] == 0
    st.free(b)
    assert st.memory_stats(cpu())["cached"] == 8192
    assert st.memory_stats(cpu())["largest_free_block"] == 8192
    st.release_all(cpu())
    stats = st.memory_stats(cpu())
    assert stats["cached"] == 0 and stats["in_use"] == 4096
    st.as_numpy(keep, (1024,), np.float32)[:] = 1.0            # live blocks stay valid
    st.free(keep)


def test_figures_track_use_peak_and_counts():
    hs = [st.alloc(1 << 16, cpu()) for _ in range(4)]
    stats = st.memory_stats(cpu())
    assert stats["in_use"] == 4 << 16 and stats["requested"] == 4 << 16
    assert stats["peak"] == 4 << 16
    for h in hs[:3]:
        st.free(h)
    stats = st.memory_stats(cpu())
    assert stats["in_use"] == 1 << 16 and stats["peak"] == 4 << 16
    assert stats["cached"] == 3 << 16
    st.reset_peak(cpu())
    assert st.memory_stats(cpu())["peak"] == 1 << 16
    table = st.memory_summary()
    assert "cpu(0)" in table and "Naive" in table
    st.free(hs[3])


def test_a_view_keeps_its_block_alive():
    h = st.alloc(4000, cpu())
    view = st.as_numpy(h, (1000,), np.float32)
    del h
    gc.collect()
    view[:] = 2.0                              # the handle lives on in the view
    assert st.memory_stats(cpu())["in_use"] == 4032
    del view
    gc.collect()
    assert st.memory_stats(cpu())["in_use"] == 0


def test_views_check_their_size():
    h = st.alloc(100, cpu())
    with pytest.raises(ValueError, match=r"needs 104 bytes; the handle holds 100"):
        st.as_numpy(h, (26,), np.float32)
    with pytest.raises(ValueError, match="host memory; use as_numpy"):
        st.as_cupy(h, (1,), np.float32)
    st.free(h)
    with pytest.raises(ValueError, match="was freed"):
        st.as_numpy(h, (1,), np.uint8)


def _has_cupy():
    try:
        import cupy  # noqa: F401
        return True
    except ImportError:
        return False


@pytest.mark.parametrize("args, exc, text", [
    ((-1, cpu()), ValueError, "'size' must be >= 0, got -1"),
    ((1 << 51, cpu()), ValueError, "larger than any device"),
    ((1.5, cpu()), TypeError, "'size' must be an int, got float"),
    ((10, "cpu"), TypeError, "'ctx' must be a Context such as cpu(0), got str"),
])
def test_bad_sizes_and_contexts(args, exc, text):
    with pytest.raises(exc) as info:
        st.alloc(*args)
    assert text in str(info.value)


def test_double_free_and_foreign_blocks_are_refused():
    h = st.alloc(256, cpu())
    addr = h.ptr
    st.free(h)
    with pytest.raises(ValueError, match="already freed"):
        st.free(h)
    with pytest.raises(ValueError, match="not live in the cpu\\(0\\) pool: freed twice"):
        _storage._free_address(addr, 256, cpu())
    other = st.alloc(256, cpu(1))               # another device's pool
    with pytest.raises(ValueError, match="not live in the cpu\\(0\\) pool"):
        _storage._free_address(other.ptr, 256, cpu())
    with pytest.raises(ValueError, match="not live in the cpu\\(7\\) pool"):
        _storage._free_address(0x1000, 16, cpu(7))   # a device with no pool
    st.free(other)
    assert st.memory_stats(cpu())["in_use"] == 0       # nothing was corrupted


def test_out_of_memory_is_a_clear_error_and_the_pool_survives():
    with pytest.raises(MemoryError) as info:
        st.alloc(1 << 46, cpu())                # 64 TiB
    text = str(info.value)
    assert "cannot allocate 64.0 TiB" in text and "cpu(0)" in text and "pool Naive" in text
    st.free(st.alloc(64, cpu()))


def test_debug_mode_catches_a_write_after_free():
    _storage._set_debug(True)
    h = st.alloc(4096, cpu())
    dangling = st.as_numpy(h, (4096,), np.uint8)
    st.free(h)                      # the view still points at the freed block
    dangling[100] = 7               # use after free
    with pytest.raises(MXNetError, match="use after free on cpu\\(0\\).*offset 100"):
        st.alloc(4096, cpu())
    h2 = st.alloc(4096, cpu())      # the corrupted block was dropped; the pool goes on
    st.free(h2)
    assert st.alloc(4096, cpu()).live


def test_two_threads_allocating_and_freeing_concurrently():
    errors = []

    def worker(tid):
        rng = random.Random(tid)
        held = []
        try:
            for i in range(5000):
                if held and (rng.random() < 0.5 or len(held) > 50):
                    h, tag = held.pop(rng.randrange(len(held)))
                    a = st.as_numpy(h, (h.size,), np.uint8)
                    if not (a == tag).all():
                        errors.append(f"thread {tid}: block overwritten")
                    st.free(h)
                else:
                    size = rng.choice([64, 100, 4096, 5000, 1 << 16])
                    h = st.alloc(size, cpu())
                    tag = (tid * 97 + i) % 256
                    st.as_numpy(h, (size,), np.uint8)[:] = tag
                    held.append((h, tag))
            for h, _ in held:
                st.free(h)
        except Exception as exc:   # reported below
            errors.append(repr(exc))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    stats = st.memory_stats(cpu())
    assert stats["in_use"] == 0 and stats["requested"] == 0


def test_pinned_memory_without_cuda_warns_once_and_works():
    if _has_cupy():
        pytest.skip("CuPy present: pinned memory is real")
    with pytest.warns(RuntimeWarning, match="cpu_pinned memory without CUDA"):
        h = st.alloc(1000, cpu_pinned())
    st.as_numpy(h, (1000,), np.uint8)[:] = 1
    st.free(h)


def test_bad_pool_settings():
    with pytest.raises(ValueError, match="'pool_type' must be one of Naive, Round, Unpooled"):
        st.set_pool_type("cpu", "Buddy")
    with pytest.raises(ValueError, match="'device_type' must be 'cpu' or 'gpu'"):
        st.set_pool_type("tpu", "Naive")
    proc = subprocess.run(
        [sys.executable, "-c", "import mx_storage, mx_engine; mx_storage.alloc(8, mx_engine.cpu())"],
        capture_output=True, text=True, env={"MXNET_CPU_MEM_POOL_TYPE": "Buddy",
                                             "PATH": "/usr/bin:/bin"})
    assert "MXNET_CPU_MEM_POOL_TYPE must be one of Naive, Round, Unpooled, got 'Buddy'" \
        in proc.stderr


def test_round_pool_keeps_backing_memory_within_twice_the_live_peak():
    st.set_pool_type("cpu", "Round")
    rng = random.Random(0)
    live = []
    peak_live = peak_backing = 0
    for _ in range(4000):
        if live and rng.random() < 0.5:
            st.free(live.pop(rng.randrange(len(live))))
        else:
            live.append(st.alloc(rng.randint(1, 1 << 20), cpu()))
        peak_live = max(peak_live, sum(h.size for h in live))
        stats = st.memory_stats(cpu())
        peak_backing = max(peak_backing, stats["in_use"] + stats["cached"])
    for h in live:
        st.free(h)
    assert peak_backing <= 2 * peak_live, (peak_backing, peak_live)
    assert st.memory_stats(cpu())["reused"] > 1000      # still a cache, not a pass-through


@pytest.mark.gpu
def test_gpu_blocks_cupy_views_and_reuse():
    import cupy
    h = st.alloc(4000, gpu(0))
    first = h.ptr
    x = st.as_cupy(h, (1000,), np.float32)
    x[:] = 3
    assert float(x.sum()) == 3000.0
    del x
    st.free(h)
    reused = st.memory_stats(gpu(0))["reused"]      # earlier GPU tests count too
    h2 = st.alloc(4000, gpu(0))
    assert h2.ptr == first and st.memory_stats(gpu(0))["reused"] == reused + 1
    st.free(h2)
    st.release_all(gpu(0))
    assert st.memory_stats(gpu(0))["cached"] == 0
    cupy.cuda.Device(0).synchronize()
