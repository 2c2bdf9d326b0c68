"""Helpers shared by the iterator tests, as the fixture ``iter_ref`` (tests
run with --import-mode=importlib, so they cannot import a sibling module):
the MXNet 1.9.1 reference batches written by data/make_iter_reference.py,
and the batches of one of our iterators in the same form."""
import pathlib
import types

import numpy as np
import pytest

DATA = pathlib.Path(__file__).parent / "data"
INPUTS = DATA / "iter_inputs"
REF = DATA / "iter_reference"


def reference(name):
    """[epoch][batch] -> {'data', 'label', 'pad', 'index'?} of case ``name``."""
    z = np.load(REF / f"{name}.npz")
    epochs = {}
    for key in z.files:
        if key.startswith("meta_"):
            continue
        e, b, field = key.split("_", 2)
        epochs.setdefault(int(e[1:]), {}).setdefault(int(b[1:]), {})[field] = z[key]
    return [[epochs[e][b] for b in sorted(epochs[e])] if e in epochs else []
            for e in range(max(epochs) + 1 if epochs else 0)]


def batches(it, epochs):
    """[epoch][batch] -> (data, label, pad, index) read from ``it``."""
    out = []
    for e in range(epochs):
        if e:
            it.reset()
        out.append([(b.data[0].asnumpy(), b.label[0].asnumpy() if b.label else None, b.pad,
                     b.index) for b in it])
    return out


@pytest.fixture
def iter_ref():
    return types.SimpleNamespace(INPUTS=INPUTS, REF=REF, reference=reference, batches=batches)
