"""Writes norm_mxnet191.npz here with real MXNet 1.9.1:

    /tmp/mxnet-venv/bin/python packages/mx-ops/tests/data/make_norm_reference.py

What MXNet 1.9.1 gives, forward and gradient (autograd with a random head
gradient ``og``), for the normalization operators of issue 15 that
test_row_norm.py, test_moments.py, test_batch_norm_v1.py (and the tests of
hard_sigmoid and SVMOutput) compare with.  Keys are
``<case>.<field>``; each case stores its inputs, outputs and gradients:

- ``layer.<shape>.<axis>.<dtype>``: LayerNorm(output_mean_var=True) x, gamma,
  beta, out, mean, std, og, dx, dgamma, dbeta (eps 1e-5);
- ``group.<shape>.<groups>.<dtype>``: GroupNorm(num_groups, output_mean_var=True),
  same fields;
- ``instance.<shape>``: InstanceNorm(eps=1e-3), float32 (its only dtype):
  x, gamma, beta, out, og, dx, dgamma, dbeta;
- ``moments.<shape>.<axes>.<keepdims>``: x, mean, var, og_mean, og_var, dx;
- ``bnv1.<shape>.<fix_gamma>.<mode>``: BatchNorm_v1 (eps 1e-3, momentum 0.8,
  output_mean_var) bound as a symbol, mode train or predict: x, gamma, beta,
  moving_mean, moving_var (before), out, mean, var, og, dx, dgamma, dbeta, and the
  moving statistics after the forward (mm_fwd, mv_fwd) and after the backward
  (mm_bwd, mv_bwd);
- ``hard_sigmoid.<dtype>``: x, y, og, dx (alpha 0.3, beta 0.4);
- ``svm.<use_linear>``: x, label, y, dx (margin 0.7, regularization_coefficient 1.5).
"""
from pathlib import Path

import mxnet as mx
import numpy as np

OUT = Path(__file__).resolve().parent / "norm_mxnet191.npz"
rng = np.random.default_rng(151)


def grads(fn, arrays, nout=1):
    """Outputs, head gradients and input gradients of fn(*arrays) under autograd."""
    nds = [mx.nd.array(a, dtype=a.dtype) for a in arrays]
    for a in nds:
        a.attach_grad()
    with mx.autograd.record():
        outs = fn(*nds)
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    ogs = [rng.standard_normal(o.shape).astype(arrays[0].dtype) for o in outs[:nout]]
    mx.autograd.backward(outs[:nout], [mx.nd.array(g, dtype=g.dtype) for g in ogs])
    return [o.asnumpy() for o in outs], ogs, [a.grad.asnumpy() for a in nds]


def main():
    out = {}

    def put(key, **fields):
        for k, v in fields.items():
            out[f"{key}.{k}"] = np.asarray(v)

    for shape, axis in (((4, 7), -1), ((3, 5, 6), 1), ((2, 3, 4), 0), ((6,), 0)):
        for dtype in ("float32", "float64"):
            k = shape[axis]
            x = (rng.standard_normal(shape) * 2 + 1).astype(dtype)
            g, b = rng.uniform(0.5, 1.5, k).astype(dtype), rng.standard_normal(k).astype(dtype)
            (y, m, s), (og,), (dx, dg, db) = grads(
                lambda a, c, d: mx.nd.LayerNorm(a, c, d, axis=axis, output_mean_var=True),
                [x, g, b])
            put(f"layer.{'x'.join(map(str, shape))}.{axis}.{dtype}", x=x, gamma=g, beta=b,
                out=y, mean=m, std=s, og=og, dx=dx, dgamma=dg, dbeta=db)
    for shape, groups in (((2, 6, 5), 3), ((3, 4, 2, 3), 2), ((2, 5, 4), 1)):
        for dtype in ("float32", "float64"):
            x = (rng.standard_normal(shape) * 2 - 1).astype(dtype)
            g = rng.uniform(0.5, 1.5, groups).astype(dtype)
            b = rng.standard_normal(groups).astype(dtype)
            (y, m, s), (og,), (dx, dg, db) = grads(
                lambda a, c, d: mx.nd.GroupNorm(a, c, d, num_groups=groups,
                                                output_mean_var=True), [x, g, b])
            put(f"group.{'x'.join(map(str, shape))}.{groups}.{dtype}", x=x, gamma=g, beta=b,
                out=y, mean=m, std=s, og=og, dx=dx, dgamma=dg, dbeta=db)
    for shape in ((2, 3, 5), (3, 4, 2, 3), (1, 2, 1)):
        x = (rng.standard_normal(shape) * 3 + 2).astype("float32")
        g = rng.uniform(0.5, 1.5, shape[1]).astype("float32")
        b = rng.standard_normal(shape[1]).astype("float32")
        (y,), (og,), (dx, dg, db) = grads(lambda a, c, d: mx.nd.InstanceNorm(a, c, d), [x, g, b])
        put(f"instance.{'x'.join(map(str, shape))}", x=x, gamma=g, beta=b, out=y, og=og,
            dx=dx, dgamma=dg, dbeta=db)
    for shape, axes, keep in (((3, 4, 5), (1,), False), ((3, 4, 5), (0, 2), True),
                              ((3, 4, 5), (0, 1, 2), False), ((4, 6), (-1,), True)):
        x = rng.standard_normal(shape).astype("float32")
        kw = {} if axes is None else {"axes": axes}
        (m, v), (ogm, ogv), (dx,) = grads(lambda a: mx.nd.moments(a, keepdims=keep, **kw),
                                          [x], nout=2)
        put(f"moments.{'x'.join(map(str, shape))}.{axes}.{keep}", x=x, mean=m, var=v,
            og_mean=ogm, og_var=ogv, dx=dx)
    for shape in ((4, 3, 2, 2), (5, 3)):
        for fix_gamma in (True, False):
            for mode in ("train", "predict"):
                c = shape[1]
                x = (rng.standard_normal(shape) * 2 + 1).astype("float32")
                g = rng.uniform(0.5, 1.5, c).astype("float32")
                b, mm = rng.standard_normal(c).astype("float32"), rng.standard_normal(c)
                mv = rng.uniform(0.5, 2, c).astype("float32")
                sym = mx.sym.BatchNorm_v1(mx.sym.var("x"), name="bn", fix_gamma=fix_gamma,
                                          output_mean_var=True, eps=1e-3, momentum=0.8)
                ex = sym.simple_bind(mx.cpu(), x=shape, grad_req="write")
                for k, v in (("x", x), ("bn_gamma", g), ("bn_beta", b)):
                    ex.arg_dict[k][:] = v
                ex.aux_dict["bn_moving_mean"][:] = mm
                ex.aux_dict["bn_moving_var"][:] = mv
                outs = [o.asnumpy() for o in ex.forward(is_train=mode == "train")]
                mm_fwd = ex.aux_dict["bn_moving_mean"].asnumpy()
                mv_fwd = ex.aux_dict["bn_moving_var"].asnumpy()
                og = rng.standard_normal(shape).astype("float32")
                ex.backward([mx.nd.array(og), mx.nd.zeros(c), mx.nd.zeros(c)])
                put(f"bnv1.{'x'.join(map(str, shape))}.{fix_gamma}.{mode}", x=x, gamma=g,
                    beta=b, moving_mean=mm.astype("float32"), moving_var=mv, out=outs[0],
                    mean=outs[1], var=outs[2], og=og, dx=ex.grad_dict["x"].asnumpy(),
                    dgamma=ex.grad_dict["bn_gamma"].asnumpy(),
                    dbeta=ex.grad_dict["bn_beta"].asnumpy(), mm_fwd=mm_fwd, mv_fwd=mv_fwd,
                    mm_bwd=ex.aux_dict["bn_moving_mean"].asnumpy(),
                    mv_bwd=ex.aux_dict["bn_moving_var"].asnumpy())
    for dtype in ("float32", "float64"):
        x = np.concatenate([np.linspace(-4, 4, 17), [-4 / 3, 2.0, 1.0 / 0.3 - 4 / 3]]).astype(dtype)
        (y,), (og,), (dx,) = grads(lambda a: mx.nd.hard_sigmoid(a, alpha=0.3, beta=0.4), [x])
        put(f"hard_sigmoid.{dtype}", x=x, y=y, og=og, dx=dx)
    for use_linear in (False, True):
        x = rng.standard_normal((5, 4)).astype("float32")
        label = np.array([0, 3, 1, 2, 3], "float32")
        a, lab = mx.nd.array(x), mx.nd.array(label)
        a.attach_grad()
        with mx.autograd.record():
            y = mx.nd.SVMOutput(a, lab, margin=0.7, regularization_coefficient=1.5,
                                use_linear=use_linear)
        y.backward()
        put(f"svm.{use_linear}", x=x, label=label, y=y.asnumpy(), dx=a.grad.asnumpy())
    np.savez_compressed(OUT, **out)
    print(f"wrote {len(out)} arrays to {OUT}")


if __name__ == "__main__":
    main()
