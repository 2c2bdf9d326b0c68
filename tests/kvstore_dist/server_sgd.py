"""dist_sync with SGD on the servers (shipped as JSON): after each round
the pulled weight must equal a local updater's weight for the workers'
summed gradient, bit for bit; a key list and pushpull.  Run by
sync_sums.py after its sums (one job for both)."""
import numpy as np

import mx

shapes = {10: (4, 3), 11: (7,)}
init = {k: np.linspace(-1, 1, int(np.prod(s)), dtype=np.float32).reshape(s)
        for k, s in shapes.items()}


def sgd():
    return mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=0.01, rescale_grad=0.5)


def grad(key, rank, step):
    base = np.arange(int(np.prod(shapes[key])), dtype=np.float32).reshape(shapes[key])
    return np.cos(base * (rank + 1) + step).astype(np.float32)


def check(kv):
    """[[pulled == local, per key] per step], how far the weights moved,
    and the last pulled weights."""
    kv.init(list(shapes), [mx.nd.array(init[k]) for k in shapes])
    kv.set_optimizer(sgd())
    local = mx.optimizer.get_updater(sgd())
    expected = {k: mx.nd.array(init[k]) for k in shapes}
    match = []
    for step in range(3):
        for key in shapes:
            summed = sum(grad(key, r, step) for r in range(kv.num_workers))
            local(key, mx.nd.array(summed), expected[key])   # the server's index: the key
        outs = [mx.nd.zeros(shapes[k]) for k in shapes]
        if step < 2:
            kv.push(list(shapes), [mx.nd.array(grad(k, kv.rank, step)) for k in shapes])
            kv.pull(list(shapes), out=outs)
        else:
            kv.pushpull(list(shapes), [mx.nd.array(grad(k, kv.rank, step)) for k in shapes],
                        out=outs)
        match.append([bool((o.asnumpy() == expected[k].asnumpy()).all())
                      for k, o in zip(shapes, outs)])
        moved = [float(np.abs(o.asnumpy() - init[k]).max()) for k, o in zip(shapes, outs)]
    return match, moved, [o.asnumpy().tolist() for o in outs]
