"""``mx.test_utils``: MXNet 1.9.1's test helpers, checked against NumPy and
hand-computed answers."""
import os

import numpy as np
import pytest

import mx
import mx.test_utils as tu
import mx_ops.test_utils


def test_built_on_the_operator_level_helpers():
    assert tu.plan_cache_limit is mx_ops.test_utils.plan_cache_limit
    assert tu.numeric_gradient is mx_ops.test_utils.numeric_gradient


def test_default_context_follows_set_default_context():
    assert tu.default_context() == mx.cpu(0)
    try:
        tu.set_default_context(mx.cpu(1))
        assert tu.default_context() == mx.cpu(1)
        assert mx.current_context() == mx.cpu(1)
    finally:
        tu.set_default_context(mx.cpu(0))


def test_tolerances_per_dtype():
    assert tu.get_tols(np.float16(1), np.float32(1), None, None) == (1e-2, 1e-1)
    assert tu.get_tols(np.zeros(2, np.float64), 1.0, None, None) == (1e-5, 1e-20)  # both float64
    assert tu.get_tols(np.zeros(2, np.float32), 1.0, None, None) == (1e-4, 1e-3)
    assert tu.get_tols(np.zeros(2), np.zeros(2), 0.5, {np.dtype(np.float64): 7}) == (0.5, 7)
    assert tu.get_rtol() == 1e-5 and tu.get_atol(3) == 3 and tu.get_etol() == 0


def test_assert_almost_equal_accepts_ndarray_numpy_scalars():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    tu.assert_almost_equal(mx.nd.array(a), a)
    tu.assert_almost_equal(a, mx.nd.array(a) + 1e-5)
    tu.assert_almost_equal(2.0, np.float32(2.0))
    tu.assert_almost_equal(np.array([True, False]), np.array([True, False]))
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(np.array([True]), np.array([False]))


def test_assert_almost_equal_message_names_worst_element():
    a = np.zeros((3, 4))
    b = np.zeros((3, 4))
    b[1, 2] = 0.5
    b[2, 3] = 0.25
    with pytest.raises(AssertionError) as err:
        tu.assert_almost_equal(a, b, rtol=1e-5, atol=1e-3, names=("got", "want"))
    msg = str(err.value)
    assert "Location of maximum error: (1, 2), got=0.00000000, want=0.50000000" in msg
    # 2 of 12 elements out of tolerance; the worst is 0.5 / (1e-3 + 1e-5 * 0.5)
    # tolerances off.
    assert "mismatch 16.666667%" in msg
    assert "Error 497.512438 exceeds tolerance rtol=1.000000e-05, atol=1.000000e-03" in msg


def test_assert_almost_equal_nan_and_tolerances():
    nan = np.array([1.0, np.nan])
    tu.assert_almost_equal(nan, nan.copy(), equal_nan=True)
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(nan, nan.copy())
    tu.assert_almost_equal(np.array([1.0]), np.array([1.1]), rtol=0.1, atol=0)
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(np.array([1.0]), np.array([1.2]), rtol=0.1, atol=0)
    tu.assert_almost_equal_ignore_nan(np.array([np.nan, 1.0]), np.array([5.0, 1.0]))
    tu.assert_allclose(np.array([1.0, np.nan]), np.array([1.0, np.nan]))
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(np.zeros(2), np.zeros(3), use_broadcast=False)


def test_assert_almost_equal_with_err_allows_a_share():
    a, b = np.zeros(10), np.zeros(10)
    b[0] = 1
    tu.assert_almost_equal_with_err(a, b, rtol=0, atol=1e-6, etol=0.1)
    with pytest.raises(AssertionError, match="Error_rate=0.100000"):
        tu.assert_almost_equal_with_err(a, b, rtol=0, atol=1e-6, etol=0.05)


def test_almost_equal_and_same():
    assert tu.almost_equal(np.ones(3), np.ones(3) + 1e-7)
    assert not tu.almost_equal(np.ones(3), np.ones(3) + 1e-3)
    assert tu.same(np.arange(3), mx.nd.array([0, 1, 2]).asnumpy().astype(np.int64))
    assert not tu.same(np.arange(3), np.arange(4))


def test_assert_exception():
    tu.assert_exception(int, ValueError, "x")
    with pytest.raises(AssertionError):
        tu.assert_exception(int, ValueError, "3")
    with pytest.raises(TypeError):  # another exception type passes through
        tu.assert_exception(int, ValueError, object())


def test_rand_shapes_and_arrays():
    np.random.seed(0)
    for _ in range(20):
        s2, s3, sn = tu.rand_shape_2d(4, 5), tu.rand_shape_3d(2, 3, 4), tu.rand_shape_nd(5, 3)
        assert len(s2) == 2 and 1 <= s2[0] <= 4 and 1 <= s2[1] <= 5
        assert len(s3) == 3 and all(1 <= d <= m for d, m in zip(s3, (2, 3, 4)))
        assert len(sn) == 5 and all(1 <= d <= 3 for d in sn)
    a = tu.random_arrays((2, 3))
    assert a.shape == (2, 3) and a.dtype == np.float32
    a, b, s = tu.random_arrays((1,), (4, 2), ())
    assert b.shape == (4, 2) and s.shape == ()
    u = tu.random_uniform_arrays((100,), low=2, high=3)[0]
    assert u.min() >= 2 and u.max() < 3
    x = tu.rand_ndarray((3, 4), dtype=np.float64)
    assert isinstance(x, mx.nd.NDArray) and x.shape == (3, 4) and x.dtype == np.float64
    assert sorted(tu.random_sample(list(range(10)), 10)) == list(range(10))
    assert len(set(tu.random_sample(list(range(10)), 4))) == 4


@pytest.mark.parametrize("stype", ["row_sparse", "csr"])
def test_rand_ndarray_sparse(stype):
    np.random.seed(5)
    x = tu.rand_ndarray((30, 4), stype, density=0.3, dtype="float64")
    assert x.stype == stype and x.shape == (30, 4) and x.dtype == np.float64
    x.check_format()
    dense = x.asnumpy()
    nonzero = (dense.any(axis=1) if stype == "row_sparse" else dense != 0).mean()
    assert 0.05 < nonzero < 0.6          # about the density asked for
    tu.assert_almost_equal(x, dense)
    assert tu.same(x, dense)
    arr, parts = tu.rand_sparse_ndarray((6, 5), stype, density=1.0)
    if stype == "row_sparse":
        np.testing.assert_array_equal(parts[1], np.arange(6))
        np.testing.assert_array_equal(arr.data.asnumpy(), parts[0])
    else:
        np.testing.assert_array_equal(arr.indptr.asnumpy(), parts[0].asnumpy())
    if stype == "csr":
        p, _ = tu.rand_sparse_ndarray((5, 16), "csr", density=0.5, distribution="powerlaw")
        nnz = np.diff(p.indptr.asnumpy())
        assert nnz[2] == 2 * nnz[1] and nnz[3] == 2 * nnz[2]
        shuffled = tu.shuffle_csr_column_indices(arr)
        tu.assert_almost_equal(shuffled.asscipy().toarray(), arr.asnumpy())


def test_np_reduce():
    x = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(tu.np_reduce(x, (0, 2), True, np.sum),
                                  x.sum(axis=(0, 2), keepdims=True))
    np.testing.assert_array_equal(tu.np_reduce(x, 1, False, np.max), x.max(axis=1))
    assert tu.np_reduce(x, None, False, np.sum) == x.sum()


def test_simple_forward():
    x = mx.sym.Variable("x")
    y = mx.sym.Variable("y")
    out = tu.simple_forward(x * y + 1, x=np.array([1.0, 2.0]), y=np.array([3.0, 4.0]))
    np.testing.assert_allclose(out, [4.0, 9.0])


def test_check_symbolic_forward_dot():
    lhs, rhs = mx.sym.Variable("lhs"), mx.sym.Variable("rhs")
    mat1, mat2 = np.array([[1.0, 2], [3, 4]]), np.array([[5.0, 6], [7, 8]])
    outs = tu.check_symbolic_forward(mx.sym.dot(lhs, rhs), [mat1, mat2],
                                     [np.array([[19, 22], [43, 50]])])
    assert outs[0].shape == (2, 2)
    tu.check_symbolic_forward(mx.sym.dot(lhs, rhs), {"lhs": mat1, "rhs": mat2},
                              [mat1 @ mat2])
    with pytest.raises(AssertionError, match="EXPECTED_"):
        tu.check_symbolic_forward(mx.sym.dot(lhs, rhs), [mat1, mat2], [mat1 @ mat2 + 1])
    with pytest.raises(ValueError, match="do not match"):
        tu.check_symbolic_forward(mx.sym.dot(lhs, rhs), {"lhs": mat1}, [mat1])


def test_check_symbolic_backward_matches_hand_gradient():
    # d/da sum(g * a * b) = g * b, d/db = g * a.
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    va, vb = np.array([[1.0, -2.0, 3.0]]), np.array([[4.0, 5.0, -6.0]])
    g = np.array([[0.5, 1.0, 2.0]])
    grads = tu.check_symbolic_backward(a * b, [va, vb], [g], [g * vb, g * va])
    np.testing.assert_allclose(grads["a"].asnumpy(), g * vb)
    # tanh: d/dx = g * (1 - tanh(x)^2)
    x = mx.sym.Variable("x")
    vx = np.array([0.1, -0.7, 1.3])
    t = mx.sym.tanh(x)
    tu.check_symbolic_backward(t, {"x": vx}, {t.list_outputs()[0]: np.ones(3)},
                               {"x": 1 - np.tanh(vx) ** 2}, dtype=np.float64)
    with pytest.raises(AssertionError, match="BACKWARD_a"):
        tu.check_symbolic_backward(a * b, [va, vb], [g], [g * va, g * vb])


@pytest.mark.parametrize("req", ["add", "null"])
def test_check_symbolic_backward_grad_req(req):
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    va, vb = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    expected = [vb, va] if req == "add" else [np.zeros(2), np.zeros(2)]
    tu.check_symbolic_backward(a * b, [va, vb], [np.ones(2)], expected, grad_req=req)
    tu.check_symbolic_backward(a * b, [va, vb], [np.ones(2)], [expected[0], va],
                               grad_req={"a": req, "b": "write"})


def test_check_numeric_gradient_passes_on_right_gradients():
    np.random.seed(1)
    x, w = mx.sym.Variable("x"), mx.sym.Variable("w")
    tu.check_numeric_gradient(mx.sym.tanh(x) * w, [np.random.randn(3, 4), np.random.randn(3, 4)],
                              numeric_eps=1e-3, rtol=1e-2, atol=1e-3)
    fc = mx.sym.FullyConnected(x, num_hidden=3, name="fc")
    tu.check_numeric_gradient(fc, {"x": np.random.randn(2, 4), "fc_weight": np.random.randn(3, 4),
                                   "fc_bias": np.random.randn(3)},
                              numeric_eps=1e-3, rtol=1e-2, atol=1e-3, dtype=np.float64)
    tu.check_numeric_gradient(fc, {"x": np.random.randn(2, 4), "fc_weight": np.random.randn(3, 4),
                                   "fc_bias": np.random.randn(3)},
                              grad_nodes=["x"], numeric_eps=1e-3, rtol=1e-2, atol=1e-3)


def test_check_numeric_gradient_fails_on_a_wrong_gradient():
    # BlockGrad passes its input forward but gives no gradient: the
    # finite differences see x * x, the backward pass only one factor.
    x = mx.sym.Variable("x")
    wrong = x * mx.sym.BlockGrad(x)
    with pytest.raises(AssertionError, match="NUMERICAL_x"):
        tu.check_numeric_gradient(wrong, [np.random.rand(2, 3) + 1], numeric_eps=1e-3,
                                  rtol=1e-2, atol=1e-3)


def test_check_consistency_across_dtypes():
    np.random.seed(2)
    x = mx.sym.Variable("x")
    s = mx.sym.FullyConnected(x, num_hidden=4, name="fc")
    gt = tu.check_consistency(s, [
        {"ctx": mx.cpu(0), "x": (2, 3), "type_dict": {"x": np.float64}},
        {"ctx": mx.cpu(0), "x": (2, 3), "type_dict": {"x": np.float32}}])
    assert gt["fc_output"].dtype == np.float64 and gt["fc_weight"].shape == (4, 3)
    # A ground truth the executors do not reproduce must be caught.
    wrong = {k: v.asnumpy() + 1 for k, v in gt.items()}
    with pytest.raises(AssertionError):
        tu.check_consistency(s, [{"ctx": mx.cpu(0), "x": (2, 3)}] * 2, ground_truth=wrong)


def test_check_speed_returns_seconds():
    x = mx.sym.Variable("x")
    s = mx.sym.FullyConnected(x, num_hidden=4)
    for typ in ("whole", "forward"):
        t = tu.check_speed(s, ctx=mx.cpu(), N=3, typ=typ, x=(2, 3))
        assert 0 < t < 10
    assert tu.check_speed(s, location={"x": np.ones((2, 3))}, N=1) > 0
    with pytest.raises(ValueError):
        tu.check_speed(s, N=1, typ="backward", x=(2, 3))


def test_environment_sets_and_restores():
    os.environ.pop("MX_TU_A", None)
    os.environ["MX_TU_B"] = "old"
    with tu.environment({"MX_TU_A": "1", "MX_TU_B": None}):
        assert os.environ["MX_TU_A"] == "1" and "MX_TU_B" not in os.environ
    assert "MX_TU_A" not in os.environ and os.environ["MX_TU_B"] == "old"
    with pytest.raises(RuntimeError):
        with tu.environment("MX_TU_B", "new"):
            assert os.environ["MX_TU_B"] == "new"
            raise RuntimeError
    assert os.environ.pop("MX_TU_B") == "old"


def test_dummy_iter_repeats_the_first_batch():
    class Real:
        provide_data, provide_label, batch_size = [("data", (2, 3))], [], 2

        def __init__(self):
            self.batches = iter(["b0", "b1"])

        def __next__(self):
            return next(self.batches)

    it = tu.DummyIter(Real())
    assert [b for b, _ in zip(it, range(5))] == ["b0"] * 5
    assert it.batch_size == 2 and it.provide_data == [("data", (2, 3))]


@pytest.mark.parametrize("name", ["get_mnist", "get_mnist_pkl", "get_mnist_ubyte", "get_cifar10"])
def test_downloaders_name_the_files_to_provide(name):
    with pytest.raises(RuntimeError, match="provide .*(mnist|cifar|ubyte)"):
        getattr(tu, name)()


def test_download_returns_a_provided_file(tmp_path):
    (tmp_path / "f.bin").write_bytes(b"x")
    assert tu.download("http://x/f.bin", dirname=str(tmp_path)) == str(tmp_path / "f.bin")
    with pytest.raises(RuntimeError, match="g.bin"):
        tu.download("http://x/g.bin", dirname=str(tmp_path))


def test_chi_square_helpers():
    from scipy import stats
    np.random.seed(3)
    buckets, probs = tu.gen_buckets_probs_with_ppf(lambda p: stats.norm.ppf(p), 5)
    assert probs == [0.2] * 5 and buckets[0][0] == -np.inf and buckets[-1][1] == np.inf
    normal = lambda n: np.random.normal(0, 1, size=n)  # noqa: E731
    p, obs, exp = tu.chi_square_check(normal, buckets, probs, nsamples=10000)
    assert obs.sum() == 10000 and np.allclose(exp, 2000)
    assert p > 1e-4
    # The statistic against scipy's own test.
    assert np.isclose(p, stats.chisquare(obs, exp).pvalue)
    assert len(tu.verify_generator(normal, buckets, probs, nsamples=10000)) == 5
    with pytest.raises(AssertionError, match="Generator test fails"):
        tu.verify_generator(lambda n: np.random.normal(0.5, 1, size=n), buckets, probs,
                            nsamples=10000)
    # Discrete buckets: a fair die.
    die = lambda n: np.random.randint(1, 7, size=n)  # noqa: E731
    p, obs, _ = tu.chi_square_check(die, [1, 2, 3, 4, 5, 6], [1 / 6] * 6, nsamples=6000)
    assert obs.sum() == 6000 and p > 1e-4
    assert tu.mean_check(normal, 0, 1, nsamples=10000)
    assert not tu.mean_check(normal, 1, 1, nsamples=10000)
    assert tu.var_check(normal, 1, nsamples=10000)
    assert not tu.var_check(normal, 2, nsamples=10000)


def test_numpy_helpers():
    a = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(tu.collapse_sum_like(a, (3, 1)), a.sum(axis=(0, 2))[:, None])
    np.testing.assert_array_equal(tu.assign_each(np.array([1, 2]), lambda v: v * 2), [2.0, 4.0])
    np.testing.assert_array_equal(tu.assign_each2(np.array([1, 2]), np.array([3, 4]),
                                                  lambda u, v: u + v), [4.0, 6.0])
    assert tu.get_identity_mat_batch(3).shape == (2, 3, 3)


def test_retry_reruns_failing_tests():
    calls = []

    @tu.retry(3)
    def flaky():
        calls.append(1)
        assert len(calls) == 3

    flaky()
    assert len(calls) == 3


def test_matrices_with_real_eigenvalues():
    np.random.seed(4)
    m = tu.new_matrix_with_real_eigvals_nd((2, 3, 4, 4))
    assert m.shape == (2, 3, 4, 4)
    assert np.allclose(np.linalg.eigvals(m).imag, 0)
    s = tu.new_sym_matrix_with_real_eigvals_nd((3, 5, 5))
    np.testing.assert_allclose(s, np.swapaxes(s, -1, -2), atol=1e-10)
    q = tu.new_orthonormal_matrix_2d(4)
    np.testing.assert_allclose(q.T @ q, np.eye(4), atol=1e-10)


def test_small_platform_helpers(tmp_path, capfd):
    assert tu.has_tvm_ops() is False and tu.is_op_runnable() is True
    with tu.discard_stderr():
        os.write(2, b"hidden")
    os.write(2, b"shown")
    assert capfd.readouterr().err == "shown"
    with tu.environment("MXNET_HOME", str(tmp_path)):
        with pytest.raises(IOError, match="im2rec"):
            tu.get_im2rec_path()
        (tmp_path / "tools").mkdir()
        (tmp_path / "tools" / "im2rec.py").write_text("")
        assert tu.get_im2rec_path() == str(tmp_path / "tools" / "im2rec.py")


def test_every_mxnet_1_9_1_name_exists():
    # The public functions and classes of MXNet 1.9.1's mxnet/test_utils.py.
    names = """almost_equal assert_allclose assert_almost_equal assert_almost_equal_ignore_nan
    assert_almost_equal_with_err assert_exception assign_each assign_each2 checkShapes
    check_consistency check_gluon_hybridize_consistency check_numeric_gradient check_speed
    check_symbolic_backward check_symbolic_forward chi_square_check collapse_sum_like
    compare_ndarray_tuple compare_optimizer create_2d_tensor create_sparse_array
    create_sparse_array_zd create_vector default_atols default_context default_dtype
    default_numeric_eps default_rtols discard_stderr download download_model effective_dtype
    environment gen_buckets_probs_with_ppf get_atol get_bz2_data get_cifar10 get_etol
    get_identity_mat get_identity_mat_batch get_im2rec_path get_mnist get_mnist_iterator
    get_mnist_pkl get_mnist_ubyte get_rtol get_tolerance get_tols get_zip_data has_tvm_ops
    is_aarch64_run is_cd_run is_op_runnable list_gpus locationError mean_check
    new_matrix_with_real_eigvals_2d new_matrix_with_real_eigvals_nd new_orthonormal_matrix_2d
    new_sym_matrix_with_real_eigvals_2d new_sym_matrix_with_real_eigvals_nd np_reduce
    numeric_grad rand_coord_2d rand_ndarray rand_shape_2d rand_shape_3d rand_shape_nd
    rand_sparse_ndarray random_arrays random_sample random_uniform_arrays retry same same_array
    same_symbol_structure set_default_context shuffle_csr_column_indices simple_forward
    var_check verify_generator DummyIter""".split()
    assert [n for n in names if not callable(getattr(tu, n, None))] == []


def test_aux_states_reach_the_executor():
    # Inference BatchNorm normalises with the given moving mean and variance.
    np.random.seed(5)
    x = mx.sym.Variable("x")
    bn = mx.sym.BatchNorm(x, name="bn", fix_gamma=False, eps=1e-3)
    loc = [np.random.randn(4, 3), np.random.rand(3) + 0.5, np.random.randn(3)]
    mean, var = np.random.randn(3), np.random.rand(3) + 1
    want = (loc[0] - mean) / np.sqrt(var + 1e-3) * loc[1] + loc[2]
    tu.check_symbolic_forward(bn, loc, [want], aux_states={"bn_moving_mean": mean,
                                                           "bn_moving_var": var},
                              rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="aux_states"):
        tu.check_symbolic_forward(bn, loc, [want], aux_states={"bn_moving_mean": mean})
    tu.check_numeric_gradient(bn, loc, aux_states=[mean, var], numeric_eps=1e-3, rtol=5e-2,
                              atol=1e-2)
