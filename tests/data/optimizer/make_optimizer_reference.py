"""Writes the MXNet 1.9.1 reference for tests/test_optimizer_mxnet.py and
tests/test_optimizer_states.py (run with the reference interpreter:
``/tmp/mxnet-venv/bin/python tests/data/optimizer/make_optimizer_reference.py``).

- optimizer_cases.json: each case (optimizer name, constructor arguments,
  dtype, aggregation on or off, lr/wd multipliers, symbol attributes, an
  lr_scheduler) and the nesting of its states after the steps;
- optimizer_reference.npz: the inputs (initial weights, each step's grads)
  and, per case, the weights and state arrays after STEPS updates through
  ``mx.optimizer.get_updater`` (``updater(indices, grads, weights)``);
- schedulers.json: lr sequences of every scheduler with and without warm-up;
- sgd_mom.states, adam_dump.states: pickles of Updater.get_states() (the
  second with dump_optimizer=True) after the SGD and Adam cases, so the
  restricted unpickler is tested on MXNet's own files.
"""
import json
import os

import numpy as np

import mxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))
SHAPES = [(4, 5), (7,), (2, 3, 2)]
STEPS = 3
NAMES = ["fc1_weight", "fc1_bias", "bn_gamma"]


def inputs():
    rng = np.random.RandomState(0)
    weights = [rng.uniform(-1, 1, s).astype(np.float32) for s in SHAPES]
    grads = [[rng.uniform(-1, 1, s).astype(np.float32) for s in SHAPES] for _ in range(STEPS)]
    return weights, grads


SCHED = {"class": "FactorScheduler", "params": {"step": 1, "factor": 0.5, "base_lr": 0.1}}

CASES = [
    dict(name="sgd", kwargs=dict(learning_rate=0.1)),
    dict(name="sgd", kwargs=dict(learning_rate=0.1, momentum=0.9, wd=0.01, rescale_grad=0.5,
                                 clip_gradient=0.3)),
    dict(name="sgd", kwargs=dict(learning_rate=0.1, momentum=0.9, wd=0.01), aggregate=False),
    dict(name="sgd", kwargs=dict(learning_rate=0.1, wd=0.01, clip_gradient=0.2), aggregate=False),
    dict(name="SGD", kwargs=dict(learning_rate=0.1, momentum=0.9, wd=0.01,
                                 multi_precision=True), dtype="float16"),
    dict(name="sgd", kwargs=dict(learning_rate=0.1, wd=0.01, multi_precision=True),
         dtype="float16", aggregate=False),
    dict(name="sgd", kwargs=dict(momentum=0.5, wd=0.1), scheduler=SCHED),
    dict(name="sgd", kwargs=dict(learning_rate=0.1, momentum=0.9, wd=0.1), idx2name=True,
         lr_mult=[["fc1_weight", 2.0], [1, 0.5]], wd_mult=[["bn_gamma", 3.0]]),
    dict(name="sgd", kwargs=dict(learning_rate=0.1, wd=0.1), idx2name=True,
         sym={"fc1_weight": {"lr_mult": "0.25", "wd_mult": "2"}, "fc1_bias": {"wd_mult": "1"}}),
    dict(name="signum", kwargs=dict(learning_rate=0.05, momentum=0.9, wd=0.01, wd_lh=0.02,
                                    clip_gradient=0.4)),
    dict(name="signum", kwargs=dict(learning_rate=0.05, momentum=0.0, wd=0.01)),
    dict(name="ftml", kwargs=dict(learning_rate=0.05, wd=0.01, rescale_grad=2.0,
                                  clip_gradient=0.5)),
    dict(name="lars", kwargs=dict(learning_rate=0.1, momentum=0.9, wd=0.01, eta=0.01,
                                  eps=1e-6), idx2name=True),
    dict(name="lars", kwargs=dict(learning_rate=0.1, wd=0.01), idx2name=True, scheduler=SCHED),
    dict(name="lars", kwargs=dict(learning_rate=0.1, momentum=0.9, wd=0.01,
                                  multi_precision=True), dtype="float16", idx2name=True),
    dict(name="lbsgd", kwargs=dict(learning_rate=0.1, momentum=0.9, wd=0.01, batch_scale=2,
                                   warmup_epochs=1, updates_per_epoch=2)),
    dict(name="lbsgd", kwargs=dict(learning_rate=0.1, momentum=0.9, wd=0.01, batch_scale=1,
                                   warmup_strategy="lars")),
    # DCASGD with momentum fails in MXNet 1.9.1 (`if mom:` on an array): not here.
    dict(name="dcasgd", kwargs=dict(learning_rate=0.1, wd=0.01, lamda=0.1, clip_gradient=0.5)),
    dict(name="dcasgd", kwargs=dict(learning_rate=0.1, wd=0.01)),
    dict(name="nag", kwargs=dict(learning_rate=0.1, momentum=0.9, wd=0.01, clip_gradient=0.5)),
    dict(name="nag", kwargs=dict(learning_rate=0.1, wd=0.01)),
    dict(name="nag", kwargs=dict(learning_rate=0.1, momentum=0.9, wd=0.01,
                                 multi_precision=True), dtype="float16"),
    dict(name="adam", kwargs=dict(learning_rate=0.01, wd=0.01, rescale_grad=0.5,
                                  clip_gradient=0.3)),
    dict(name="adam", kwargs=dict(wd=0.01), scheduler=SCHED),
    dict(name="adam", kwargs=dict(learning_rate=0.01, multi_precision=True), dtype="float16"),
    dict(name="adagrad", kwargs=dict(learning_rate=0.1, wd=0.01, eps=1e-6,
                                     clip_gradient=0.5)),
    dict(name="rmsprop", kwargs=dict(learning_rate=0.01, wd=0.01, gamma1=0.8,
                                     clip_gradient=0.5, clip_weights=0.9)),
    dict(name="rmsprop", kwargs=dict(learning_rate=0.01, wd=0.01, centered=True, gamma1=0.8,
                                     gamma2=0.7, clip_weights=0.9)),
    dict(name="adadelta", kwargs=dict(rho=0.8, epsilon=1e-4, wd=0.01, rescale_grad=0.5,
                                      clip_gradient=0.3)),
    dict(name="ftrl", kwargs=dict(learning_rate=0.1, lamda1=0.02, beta=0.5, wd=0.01,
                                  clip_gradient=0.6)),
    dict(name="adamax", kwargs=dict(learning_rate=0.01, wd=0.01, clip_gradient=0.5)),
    dict(name="nadam", kwargs=dict(learning_rate=0.01, wd=0.01, clip_gradient=0.5)),
    dict(name="lamb", kwargs=dict(learning_rate=0.01, wd=0.01, clip_gradient=0.5)),
    dict(name="lamb", kwargs=dict(learning_rate=0.01, wd=0.01, lower_bound=0.1,
                                  upper_bound=2.0, bias_correction=False), aggregate=False),
    dict(name="lamb", kwargs=dict(learning_rate=0.01, wd=0.01, multi_precision=True),
         dtype="float16", aggregate=False),
    dict(name="test", kwargs=dict(rescale_grad=0.5)),
]

SCHEDULERS = [
    ("FactorScheduler", dict(step=2, factor=0.5, base_lr=1.0)),
    ("FactorScheduler", dict(step=3, factor=0.1, stop_factor_lr=1e-3, base_lr=1.0,
                             warmup_steps=4, warmup_begin_lr=0.1)),
    ("MultiFactorScheduler", dict(step=[2, 5, 6], factor=0.5, base_lr=1.0)),
    ("MultiFactorScheduler", dict(step=[4, 7], factor=0.1, base_lr=1.0, warmup_steps=3,
                                  warmup_begin_lr=0.5, warmup_mode="constant")),
    ("PolyScheduler", dict(max_update=10, base_lr=1.0, pwr=2, final_lr=0.1)),
    ("PolyScheduler", dict(max_update=12, base_lr=0.5, pwr=1, warmup_steps=3,
                           warmup_begin_lr=0.1)),
    ("CosineScheduler", dict(max_update=10, base_lr=1.0, final_lr=0.1)),
    ("CosineScheduler", dict(max_update=9, base_lr=2.0, warmup_steps=4, warmup_begin_lr=0.2,
                             warmup_mode="linear")),
]


def make_scheduler(spec):
    return getattr(mx.lr_scheduler, spec["class"])(**spec["params"])


def make_sym(attrs):
    variables = [mx.sym.Variable(n, **{"__%s__" % k: v for k, v in attrs.get(n, {}).items()})
                 for n in NAMES]
    return mx.sym.Group(variables)


def flatten_state(state, key, arrays):
    """The nesting of a state with arrays replaced by their npz keys."""
    if state is None:
        return None
    if isinstance(state, mx.nd.NDArray):
        arrays[key] = state.asnumpy()
        return key
    return [flatten_state(s, "%s.%d" % (key, i), arrays) for i, s in enumerate(state)]


def run_case(i, case, weights0, grads, arrays):
    dtype = case.get("dtype", "float32")
    kwargs = dict(case["kwargs"])
    if "scheduler" in case:
        kwargs["lr_scheduler"] = make_scheduler(case["scheduler"])
    if case.get("idx2name") or "sym" in case:
        kwargs["param_idx2name"] = dict(enumerate(NAMES))
    if "sym" in case:
        kwargs["sym"] = make_sym(case["sym"])
    opt = mx.optimizer.create(case["name"], **kwargs)
    if "lr_mult" in case:
        opt.set_lr_mult(dict(case["lr_mult"]))
    if "wd_mult" in case:
        opt.set_wd_mult(dict(case["wd_mult"]))
    if not case.get("aggregate", True):
        opt.aggregate_num = 0
    updater = mx.optimizer.get_updater(opt)
    weights = [mx.nd.array(w, dtype=dtype) for w in weights0]
    for step in range(STEPS):
        g = [mx.nd.array(x, dtype=dtype) for x in grads[step]]
        if case.get("aggregate", True):
            updater(list(range(len(weights))), g, weights)
        else:
            for j, (gj, wj) in enumerate(zip(g, weights)):
                updater(j, gj, wj)
    for j, w in enumerate(weights):
        arrays["case%d/weight%d" % (i, j)] = w.asnumpy()
    return {j: flatten_state(updater.states[j], "case%d/state%d" % (i, j), arrays)
            for j in range(len(weights))}, updater, opt


def main():
    weights0, grads = inputs()
    arrays = {"input/weight%d" % j: w for j, w in enumerate(weights0)}
    for step in range(STEPS):
        for j, g in enumerate(grads[step]):
            arrays["input/grad%d_%d" % (step, j)] = g
    cases = []
    for i, case in enumerate(CASES):
        states, updater, opt = run_case(i, case, weights0, grads, arrays)
        cases.append(dict(case, states={str(k): v for k, v in states.items()},
                          lr_mult_final=sorted(opt.lr_mult.items(), key=str),
                          wd_mult_final=sorted(opt.wd_mult.items(), key=str)))
        if i == 1:
            with open(os.path.join(HERE, "sgd_mom.states"), "wb") as f:
                f.write(updater.get_states())
        if case["name"] == "adam" and "scheduler" in case:
            with open(os.path.join(HERE, "adam_dump.states"), "wb") as f:
                f.write(updater.get_states(dump_optimizer=True))
    np.savez_compressed(os.path.join(HERE, "optimizer_reference.npz"), **arrays)
    with open(os.path.join(HERE, "optimizer_cases.json"), "w") as f:
        json.dump({"mxnet_version": mx.__version__, "steps": STEPS, "names": NAMES,
                   "cases": cases}, f, indent=1, default=str)
        f.write("\n")
    seqs = []
    for cls, params in SCHEDULERS:
        sched = getattr(mx.lr_scheduler, cls)(**params)
        seqs.append(dict(cls=cls, params=params, lrs=[sched(n) for n in range(16)]))
    # Schedulers called with jumps (MXNet's loops catch up in one call).
    for cls, params in SCHEDULERS[:4]:
        sched = getattr(mx.lr_scheduler, cls)(**params)
        seqs.append(dict(cls=cls, params=params, updates=[0, 5, 6, 11, 30],
                         lrs=[sched(n) for n in [0, 5, 6, 11, 30]]))
    with open(os.path.join(HERE, "schedulers.json"), "w") as f:
        json.dump({"mxnet_version": mx.__version__, "sequences": seqs}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
