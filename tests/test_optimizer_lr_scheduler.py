"""mx.lr_scheduler against MXNet 1.9.1's lr sequences (tests/data/optimizer/
schedulers.json: each scheduler called with 0..15, and with jumps)."""
import json
import pathlib

import pytest
from hypothesis import given, settings, strategies as st

import mx

DATA = pathlib.Path(__file__).resolve().parent / "data" / "optimizer"
SEQUENCES = json.loads((DATA / "schedulers.json").read_text())["sequences"]


@pytest.mark.parametrize("seq", SEQUENCES, ids=[s["cls"] for s in SEQUENCES])
def test_sequences_match_mxnet(seq):
    sched = getattr(mx.lr_scheduler, seq["cls"])(**seq["params"])
    updates = seq.get("updates", range(len(seq["lrs"])))
    got = [sched(n) for n in updates]
    assert got == pytest.approx(seq["lrs"], rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("make,match", [
    (lambda: mx.lr_scheduler.FactorScheduler(step=0), "step must be greater"),
    (lambda: mx.lr_scheduler.FactorScheduler(step=2, factor=1.5), "Factor must be no more"),
    (lambda: mx.lr_scheduler.MultiFactorScheduler(step=[3, 2]), "increasing"),
    (lambda: mx.lr_scheduler.MultiFactorScheduler(step=[0, 2]), "greater or equal"),
    (lambda: mx.lr_scheduler.PolyScheduler(max_update=0), "strictly positive"),
    (lambda: mx.lr_scheduler.CosineScheduler(max_update=5, base_lr=0.1, warmup_begin_lr=0.2),
     "higher than warmup_begin_lr"),
    (lambda: mx.lr_scheduler.CosineScheduler(max_update=5, warmup_steps=-1), "positive or 0"),
    (lambda: mx.lr_scheduler.FactorScheduler(step=2, warmup_mode="cubic"), "linear and constant"),
])
def test_bad_arguments_are_refused(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_base_class_must_be_overridden():
    with pytest.raises(NotImplementedError):
        mx.lr_scheduler.LRScheduler()(1)


@settings(max_examples=60, deadline=None)
@given(step=st.integers(1, 6), factor=st.floats(0.1, 1.0), n=st.integers(0, 60))
def test_factor_closed_form(step, factor, n):
    # With no warm-up and a floor below reach, FactorScheduler called once at n
    # gives base_lr * factor ** floor((n - 1) / step) for n >= 1 (MXNet's loop).
    sched = mx.lr_scheduler.FactorScheduler(step=step, factor=factor, stop_factor_lr=0.0,
                                            base_lr=1.0)
    want = factor ** max(0, (n - 1) // step)
    assert sched(n) == pytest.approx(want, rel=1e-9)


def test_to_dict_round_trip():
    sched = mx.lr_scheduler.PolyScheduler(20, base_lr=0.5, pwr=3, warmup_steps=2)
    spec = sched.to_dict()
    assert spec == {"class": "PolyScheduler",
                    "params": {"max_update": 20, "base_lr": 0.5, "pwr": 3, "final_lr": 0,
                               "warmup_steps": 2, "warmup_begin_lr": 0,
                               "warmup_mode": "linear"}}
    again = mx.lr_scheduler.from_dict(spec)
    assert [again(n) for n in range(25)] == [sched(n) for n in range(25)]
    with pytest.raises(ValueError, match="unknown scheduler class 'StepLR'"):
        mx.lr_scheduler.from_dict({"class": "StepLR", "params": {}})
    with pytest.raises(ValueError, match=r"no parameter\(s\) \['gamma'\]"):
        mx.lr_scheduler.from_dict({"class": "FactorScheduler", "params": {"step": 1,
                                                                           "gamma": 2}})
