"""Convolution and Deconvolution through mx_ndarray: the generated functions
(bias left out with no_bias=True, as MXNet's skip None arrays), the engine
path, and agreement with the synchronous mx_ops.invoke."""
import numpy as np

import mx_ndarray as nd
from mx_ops import invoke

rng = np.random.default_rng(4)


def test_nd_convolution_matches_invoke_and_backward_runs():
    x = rng.standard_normal((4, 6, 9, 8)).astype(np.float32)
    w = rng.standard_normal((8, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    kw = dict(kernel=(3, 3), stride=(2, 1), pad=(1, 1), num_filter=8, num_group=2)
    got = nd.Convolution(nd.array(x), nd.array(w), nd.array(b), **kw)
    want = invoke("Convolution", [x, w, b], **kw)
    assert got.shape == (4, 8, 5, 8)
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-5)
    got = nd.Convolution(data=nd.array(x), weight=nd.array(w), no_bias=True, **kw)
    np.testing.assert_allclose(got.asnumpy(), want - b[None, :, None, None], rtol=1e-4,
                               atol=1e-4)
    dy = nd.array(rng.standard_normal(got.shape).astype(np.float32))
    grads = nd._internal._backward_Convolution(dy, nd.array(x), nd.array(w), no_bias=True,
                                               **kw)
    ref = invoke("_backward_Convolution", [dy.asnumpy(), x, w], no_bias=True, **kw)
    assert len(grads) == 2
    for g, r in zip(grads, ref):
        np.testing.assert_allclose(g.asnumpy(), r, rtol=1e-5, atol=1e-4)
    y = nd.Deconvolution(got, nd.array(w), kernel=(3, 3), num_filter=6, num_group=2)
    assert y.shape == (4, 6, 7, 10)


def test_nd_convolution_workspace_comes_from_the_temp_space():
    """The CPU kernels' packing buffers are the context's TEMP_SPACE, grown
    to what the op's workspace function asks for."""
    from mx_engine import cpu
    from mx_ops import get
    from mx_storage import resource
    resource.release_workspaces(cpu(0))
    x = rng.standard_normal((6, 8, 20, 20)).astype(np.float32)
    w = rng.standard_normal((16, 8, 3, 3)).astype(np.float32)
    kw = dict(kernel=(3, 3), pad=(1, 1), num_filter=16, no_bias=True)
    y = nd.Convolution(nd.array(x), nd.array(w), **kw)
    np.testing.assert_allclose(y.asnumpy(), invoke("Convolution", [x, w], **kw), rtol=1e-5,
                               atol=1e-5)
    op = get("Convolution")
    need = op.workspace(op.parse_params(dict(kw)), [x.shape, w.shape])
    sizes = [resource.request(cpu(0), resource.ResourceRequest.TEMP_SPACE).nbytes
             for _ in range(8)]                                # every copy, in turn
    assert max(sizes) >= need > 0
