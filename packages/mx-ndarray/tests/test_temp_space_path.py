"""The call path takes an operator's workspace in C (mx_storage._temp's
next_temp and TempSlot.grow): the same copies, in the same rotation, as
the resource manager's Python request, growing alike, and a pushed call
keeps the block it took whatever happens to its workspace later."""
import threading

import numpy as np

import mx_ndarray as nd
import mx_storage as st
from mx_engine import cpu, engine
from mx_ops import get, invoke
from mx_storage import resource

TEMP = resource.ResourceRequest.TEMP_SPACE
KW = dict(kernel=(3, 3), pad=(1, 1), num_filter=16, no_bias=True)
rng = np.random.default_rng(7)
X = rng.standard_normal((6, 8, 20, 20)).astype(np.float32)
W = rng.standard_normal((16, 8, 3, 3)).astype(np.float32)
WANT = invoke("Convolution", [X, W], **KW)
op = get("Convolution")
NEED = op.workspace(op.parse_params(dict(KW)), [X.shape, W.shape])


def conv(ctx):
    return nd.Convolution(nd.array(X, ctx=ctx), nd.array(W, ctx=ctx), **KW)


def test_call_path_and_request_share_one_rotation():
    ctx = cpu(6)
    spaces = [resource.request(ctx, TEMP) for _ in range(4)]   # the turn is back at the first
    assert NEED > 0 and [s.nbytes for s in spaces] == [0, 0, 0, 0]
    y = conv(ctx)
    y.wait_to_read()
    assert spaces[0].nbytes >= NEED and [s.nbytes for s in spaces[1:]] == [0, 0, 0]
    assert resource.request(ctx, TEMP) is spaces[1]
    np.testing.assert_allclose(conv(ctx).asnumpy(), WANT, rtol=1e-5, atol=1e-5)
    assert spaces[2].nbytes >= NEED and spaces[3].nbytes == 0   # the call took the third
    assert resource.request(ctx, TEMP) is spaces[3]
    np.testing.assert_allclose(y.asnumpy(), WANT, rtol=1e-5, atol=1e-5)


def test_first_use_of_a_device_goes_through_the_resource_manager():
    ctx = cpu(7)            # no request made on it yet: the call path creates its copies
    np.testing.assert_allclose(conv(ctx).asnumpy(), WANT, rtol=1e-5, atol=1e-5)
    nxt = resource.request(ctx, TEMP)
    assert nxt.index == 1 and nxt.nbytes == 0
    spaces = [nxt] + [resource.request(ctx, TEMP) for _ in range(3)]
    assert spaces[-1].index == 0 and spaces[-1].nbytes >= NEED


def test_growth_matches_the_python_block():
    """TempSlot.block (Python) and the call path grow one block alike:
    reused while it fits, at least doubled (64 bytes at least) when not."""
    ctx = cpu(8)
    ws = resource.request(ctx, TEMP)
    assert ws.block(0).size == 64 and ws.block(-5) is ws.block(10)
    small = ws.block(NEED // 4)
    for _ in range(3):
        resource.request(ctx, TEMP)          # the call below takes `ws` again
    y = conv(ctx)
    y.wait_to_read()
    assert ws.nbytes == max(NEED, 2 * small.size) and ws.block(NEED) is not small


def test_a_pending_call_keeps_its_block_when_the_workspace_grows_or_is_released():
    ctx = cpu(9)
    spaces = [resource.request(ctx, TEMP) for _ in range(4)]
    ws = spaces[0]
    gate, started = threading.Event(), threading.Event()

    def hold(rc):               # holds the workspace's var: the conv waits behind it
        started.set()
        gate.wait(30)

    engine.push_sync(hold, ctx, mutate_vars=[ws.var])
    started.wait(30)
    y = conv(ctx)                                   # pushed, pending, holds ws's block
    held = ws.block(0)
    assert ws.nbytes >= NEED
    ws.release()                                    # dropped by the workspace...
    bigger = ws.block(4 * NEED)                     # ...and replaced by a bigger one
    assert bigger is not held and held.live
    del held, bigger
    ws.release()
    pending = st.memory_stats(ctx)["in_use"]       # the call's block among it
    gate.set()
    np.testing.assert_allclose(y.asnumpy(), WANT, rtol=1e-5, atol=1e-5)
    nd.waitall()
    assert st.memory_stats(ctx)["in_use"] <= pending - NEED    # freed once it ran


def test_random_calls_reserve_from_the_resource_managers_generator():
    """A random op's generator comes from the same copies (next_copy), its
    draw count kept per training flag: Dropout reserves only when it drops."""
    from mx_ops.core.training import set_training
    ctx = cpu(10)
    rng = resource.request(ctx, resource.ResourceRequest.PARALLEL_RANDOM)
    x = nd.ones((3, 4), ctx=ctx)
    start = rng.offset
    for train, drawn in [(False, 0), (True, 12), (False, 0), (True, 12)]:
        previous = set_training(train)
        try:
            y = nd.Dropout(x, p=0.5)
        finally:
            set_training(previous)
        assert rng.offset - start == drawn
        start = rng.offset
        got = y.asnumpy()
        if train:
            assert set(np.unique(got)) <= {0.0, 2.0}
        else:
            np.testing.assert_array_equal(got, np.ones((3, 4), np.float32))
    u = nd.random_uniform(shape=(5,), ctx=ctx)
    assert rng.offset - start == 5 and u.shape == (5,)
