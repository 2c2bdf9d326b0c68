"""The 2bit kernels: the packed format, the residual, and the engine pushes
(CPU; GPU against CPU where there is a device)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import mx_ndarray as nd
from mx_engine import cpu, gpu
from mx_kvstore import _native
from mx_kvstore.compression import GradientCompression


def reference_2bit(grad, residual, threshold):
    """A NumPy statement of MXNet's quantize_2bit: (packed bytes, residual, sent values)."""
    r = (residual + grad).astype(np.float32)
    pos, neg = r >= threshold, r <= -threshold
    sent = np.where(pos, np.float32(threshold), np.where(neg, np.float32(-threshold), 0))
    r = np.where(pos, r - np.float32(threshold), np.where(neg, r + np.float32(threshold), r))
    codes = np.where(pos, 3, np.where(neg, 2, 0)).astype(np.uint8)
    codes = np.concatenate([codes, np.zeros((-len(codes)) % 16, np.uint8)]).reshape(-1, 4)
    packed = (codes[:, 0] << 6) | (codes[:, 1] << 4) | (codes[:, 2] << 2) | codes[:, 3]
    return packed.astype(np.uint8), r.astype(np.float32), sent.astype(np.float32)


def test_packed_format_by_hand():
    """Value 0 -> bits 7-6 of byte 0, value 4 -> bits 7-6 of byte 1 ...;
    11 is +threshold, 10 is -threshold (MXNet's posbits/negbits)."""
    grad = np.zeros(17, np.float32)
    grad[[0, 5, 16]] = [0.7, -0.5, 0.5]
    residual = np.zeros(17, np.float32)
    out = np.zeros(2, np.float32)
    _native.quantize_2bit_host(grad, residual, out, 0.5)
    assert out.view(np.uint8).tolist() == [0xC0, 0x20, 0, 0, 0xC0, 0, 0, 0]
    np.testing.assert_allclose(residual[[0, 5, 16]], [0.2, 0, 0], atol=1e-7)
    back = np.zeros(17, np.float32)
    _native.dequantize_2bit_host(out, back, 0.5)
    assert back[[0, 5, 16]].tolist() == [0.5, -0.5, 0.5] and back.sum() == 0.5


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 70), threshold=st.floats(0.05, 2), steps=st.integers(1, 4),
       seed=st.integers(0, 2**31))
def test_quantize_matches_the_numpy_statement_over_steps(n, threshold, steps, seed):
    rng = np.random.default_rng(seed)
    residual = np.zeros(n, np.float32)
    want_residual = residual.copy()
    for _ in range(steps):
        grad = (rng.standard_normal(n) * threshold).astype(np.float32)
        out = np.zeros((n + 15) // 16, np.float32)
        _native.quantize_2bit_host(grad, residual, out, threshold)
        packed, want_residual, sent = reference_2bit(grad, want_residual, threshold)
        assert out.view(np.uint8).reshape(-1, 4).ravel().tolist() == packed.tolist()
        np.testing.assert_array_equal(residual, want_residual)
        back = np.zeros(n, np.float32)
        _native.dequantize_2bit_host(out, back, threshold)
        np.testing.assert_array_equal(back, sent)


def test_host_kernels_refuse_mismatched_buffers():
    with pytest.raises(ValueError, match="need equal and 1"):
        _native.quantize_2bit_host(np.zeros(5, np.float32), np.zeros(4, np.float32),
                                   np.zeros(1, np.float32), 0.5)
    with pytest.raises(ValueError, match="17 values need 2 packed words, got 1"):
        _native.dequantize_2bit_host(np.zeros(1, np.float32), np.zeros(17, np.float32), 0.5)


def _pushed_2bit(ctx, grads, threshold):
    comp = GradientCompression({"type": "2bit", "threshold": threshold})
    n = grads.shape[1]
    residual = nd.zeros((n,), ctx=ctx)
    packed = nd.zeros(((n + 15) // 16,), ctx=ctx)
    outs = []
    for g in grads:
        comp.quantize(nd.array(g, ctx=ctx), residual, packed)
        out = nd.zeros((n,), ctx=ctx)
        comp.dequantize_sum([packed, packed], out)
        outs.append((packed.asnumpy().view(np.uint8), residual.asnumpy(), out.asnumpy()))
    return outs


def test_engine_pushes_match_the_host_kernels():
    rng = np.random.default_rng(3)
    grads = (rng.standard_normal((3, 100)) * 0.3).astype(np.float32)
    residual = np.zeros(100, np.float32)
    for g, (packed, res, out) in zip(grads, _pushed_2bit(cpu(), grads, 0.3)):
        want, residual, sent = reference_2bit(g, residual, 0.3)
        assert packed.tolist() == want.tolist()
        np.testing.assert_array_equal(res, residual)
        np.testing.assert_array_equal(out, sent + sent)


@pytest.mark.gpu
def test_gpu_twin_equals_cpu_bit_for_bit():
    rng = np.random.default_rng(4)
    grads = (rng.standard_normal((4, 1000)) * 0.4).astype(np.float32)
    for got, want in zip(_pushed_2bit(gpu(0), grads, 0.4), _pushed_2bit(cpu(), grads, 0.4)):
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)


def test_gpu_source_compiles_with_nvrtc():
    """NVRTC needs no device: the CuPy twin's source is type-checked here."""
    pytest.importorskip("cupy")
    try:
        from cupy_backends.cuda.libs import nvrtc
        nvrtc.getVersion()
        from mx_kvstore import _native_gpu
    except Exception as exc:       # noqa: BLE001 -- no usable NVRTC or CUDA libraries
        pytest.skip(f"NVRTC cannot be loaded: {exc!r}")
    for _, label, source, names in _native_gpu.compile_cases():
        prog = nvrtc.createProgram(source, "kv.cu", (), ())
        try:
            for name in names:
                nvrtc.addNameExpression(prog, name)
            try:
                nvrtc.compileProgram(prog, ("-arch=compute_80",))
            except nvrtc.NVRTCError:
                pytest.fail(nvrtc.getProgramLog(prog), pytrace=False)
            assert nvrtc.getPTX(prog), label
        finally:
            nvrtc.destroyProgram(prog)
