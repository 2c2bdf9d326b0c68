"""NDArrayIter against MXNet 1.9.1's batches (tests/data/iter_reference,
written by make_iter_reference.py) and, over random sizes, against a NumPy
model of MXNet's last-batch semantics."""
import pathlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import mx_ndarray as nd
from mx_io.io import DataBatch, DataDesc, DataIter, NDArrayIter

REF = pathlib.Path(__file__).parent / "data" / "iter_reference"
CASES = sorted(p.stem for p in REF.glob("ndarray_*.npz"))


@pytest.mark.parametrize("name", CASES)
def test_matches_mxnet(name, iter_ref):
    _, n, bs, *mode, order = name.split("_")
    n, bs, mode = int(n[1:]), int(bs[2:]), "_".join(mode)
    np.random.seed(7)
    data = np.arange(n * 2, dtype=np.float32).reshape(n, 2)
    label = np.arange(n, dtype=np.float32)
    it = NDArrayIter(data, label, bs, shuffle=order == "shuf", last_batch_handle=mode)
    ours = iter_ref.batches(it, 3)
    ref = iter_ref.reference(name)
    ref += [[]] * (3 - len(ref))
    assert [len(e) for e in ours] == [len(e) for e in ref]
    for got_epoch, ref_epoch in zip(ours, ref):
        for (data_b, label_b, pad, index), want in zip(got_epoch, ref_epoch):
            np.testing.assert_array_equal(data_b, want["data"])
            np.testing.assert_array_equal(label_b, want["label"])
            assert pad == int(want["pad"])
            assert index is None and "index" not in want


class MXNetModel:
    """MXNet 1.9.1's NDArrayIter algorithm on NumPy arrays, literally: the
    data is reordered at each shuffle, the rolled-over batch is kept as
    arrays, padding tiles the start of the data."""

    def __init__(self, data, label, bs, shuffle, mode):
        self.data, self.label, self.bs, self.shuffle, self.mode = data, label, bs, shuffle, mode
        self.n = data.shape[0]
        self.idx = np.arange(self.n)
        self.cursor = -bs
        self.cache = None
        self.reset()

    def reset(self):
        if self.shuffle:
            np.random.shuffle(self.idx)
            self.data, self.label = self.data[self.idx], self.label[self.idx]
        if self.mode == "roll_over" and self.n - self.bs < self.cursor < self.n:
            self.cursor = self.cursor - self.n - self.bs
        else:
            self.cursor = -self.bs

    def _batch(self, arr):
        c, bs, n = self.cursor, self.bs, self.n
        if self.mode == "roll_over" and -bs < c < 0:
            return np.concatenate([self.cache[arr is self.label], arr[:c + bs]])
        if self.mode == "pad" and c + bs > n:
            pad = c + bs - n
            fill = np.concatenate([arr] * (pad // n) + [arr[:pad % n]])
            return np.concatenate([arr[c:], fill])
        return arr[c:min(c + bs, n)]

    def epoch(self):
        out = []
        while True:
            self.cursor += self.bs
            if self.cursor >= self.n:
                return out
            data, label = self._batch(self.data), self._batch(self.label)
            if data.shape[0] != self.bs:
                self.cache = (data, label)
                return out
            c = self.cursor
            pad = (c + self.bs - self.n if self.mode == "pad" and c + self.bs > self.n
                   else -c if self.mode == "roll_over" and c < 0 else 0)
            out.append((data, label, pad))


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 23), bs=st.integers(1, 9), shuffle=st.booleans(),
       mode=st.sampled_from(["pad", "discard", "roll_over"]), seed=st.integers(0, 2**31))
def test_last_batch_modes_match_model(n, bs, shuffle, mode, seed, iter_ref):
    if mode == "roll_over" and bs > n:
        return                      # MXNet 1.9.1 fails there; no semantics to follow
    data = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    label = np.arange(n, dtype=np.float32) + 100
    np.random.seed(seed)
    model = MXNetModel(data, label, bs, shuffle, mode)
    want = [model.epoch()] + [(model.reset(), model.epoch())[1] for _ in range(2)]
    np.random.seed(seed)
    it = NDArrayIter(data, label, bs, shuffle=shuffle, last_batch_handle=mode)
    got = iter_ref.batches(it, 3)
    for got_epoch, want_epoch in zip(got, want):
        assert len(got_epoch) == len(want_epoch)
        for (d, l, pad, _), (wd, wl, wpad) in zip(got_epoch, want_epoch):
            np.testing.assert_array_equal(d, wd)
            np.testing.assert_array_equal(l, wl)
            assert pad == wpad


def test_names_and_descs():
    a, b = np.zeros((10, 3)), np.ones((10, 2, 2), dtype=np.int32)
    it = NDArrayIter([a, b], {"y": np.arange(10)}, batch_size=4)
    assert [d.name for d in it.provide_data] == ["_0_data", "_1_data"]
    assert [d.shape for d in it.provide_data] == [(4, 3), (4, 2, 2)]
    assert it.provide_data[0].dtype == np.float32         # MXNet makes NumPy input float32
    assert [(d.name, d.shape) for d in it.provide_label] == [("y", (4,))]
    it = NDArrayIter(np.zeros((5, 2)), np.zeros(5), 2, data_name="x", label_name="lab")
    assert [d.name for d in it.provide_data + it.provide_label] == ["x", "lab"]
    it = NDArrayIter({"b": np.zeros((4, 1)), "a": np.ones((4, 1))}, batch_size=2)
    assert [d.name for d in it.provide_data] == ["a", "b"]          # sorted, as MXNet
    batch = next(iter(it))
    assert batch.label == [] and batch.data[0].asnumpy().sum() == 2


def test_ndarray_and_list_inputs_keep_dtype():
    x = nd.array(np.arange(12).reshape(6, 2), dtype="int32")
    # A list is a list of sources, as in MXNet: one plain list, one label.
    it = NDArrayIter(x, [[1.0, 2, 3, 4, 5, 6]], batch_size=3, shuffle=True)
    assert it.provide_label[0].name == "softmax_label"
    assert it.provide_data[0].dtype == np.int32
    got = np.concatenate([b.data[0].asnumpy() for b in it])
    assert got.dtype == np.int32
    assert sorted(got[:, 0].tolist()) == list(range(0, 12, 2))


class FakeH5Dataset:
    """Reads like h5py.Dataset: slices and increasing, unique index arrays
    only; counts the reads."""

    def __init__(self, array):
        self._array = array
        self.shape, self.dtype = array.shape, array.dtype
        self.reads = 0

    def __getitem__(self, key):
        self.reads += 1
        if not isinstance(key, slice):
            key = np.asarray(key)
            if key.ndim != 1 or np.any(np.diff(key) <= 0):
                raise TypeError("Indexing elements must be in increasing order")
        return self._array[key]


@pytest.mark.parametrize("mode", ["pad", "discard", "roll_over"])
@pytest.mark.parametrize("shuffle", [False, True])
def test_h5py_like_matches_numpy(mode, shuffle, iter_ref):
    data = np.random.RandomState(0).rand(11, 4).astype(np.float32)
    label = np.arange(11, dtype=np.float32)
    fake = FakeH5Dataset(data)
    np.random.seed(3)
    want = iter_ref.batches(NDArrayIter(data, label, 4, shuffle=shuffle,
                                        last_batch_handle=mode), 3)
    np.random.seed(3)
    got = iter_ref.batches(NDArrayIter(fake, label, 4, shuffle=shuffle,
                                       last_batch_handle=mode), 3)
    for ge, we in zip(got, want):
        assert len(ge) == len(we)
        for g, w in zip(ge, we):
            np.testing.assert_array_equal(g[0], w[0])
            np.testing.assert_array_equal(g[1], w[1])
            assert g[2] == w[2]
    assert fake.reads == sum(len(e) for e in got)      # one read per batch


def test_one_copy_per_source_and_batch(monkeypatch):
    from mx_io.io import ndarray_iter
    calls = []
    for name in ("copy_rows", "gather_rows"):
        real = getattr(ndarray_iter._rows, name)
        monkeypatch.setattr(ndarray_iter._rows, name,
                            lambda *a, _n=name, _f=real: calls.append(_n) or _f(*a))
    it = NDArrayIter(np.zeros((10, 3)), np.zeros(10), 4, shuffle=True)
    assert len(list(it)) == 3 and calls == ["gather_rows"] * 6
    calls.clear()
    list(NDArrayIter(np.zeros((10, 3)), np.zeros(10), 4))
    assert calls == ["copy_rows"] * 4 + ["gather_rows"] * 2     # the padded batch gathers


def test_source_written_after_construction_is_read_after_the_write():
    x = nd.zeros((4, 2))
    it = NDArrayIter(x, batch_size=2)
    x += 1                          # pushed to the engine; the batch copy waits for it
    assert next(it).data[0].asnumpy().tolist() == [[1, 1], [1, 1]]


def test_layout_batch_axis():
    data = np.arange(2 * 5 * 3, dtype=np.float32).reshape(2, 5, 3)     # T, N, C
    it = NDArrayIter(data, batch_size=2, layout="TNC", last_batch_handle="discard")
    assert it.provide_data[0].shape == (2, 2, 3)
    got = [b.data[0].asnumpy() for b in it]
    np.testing.assert_array_equal(got[1], data[:, 2:4])
    it = NDArrayIter(data, batch_size=5, layout="TNC", shuffle=True)     # engine 'take'
    got = next(it).data[0].asnumpy()
    assert sorted(got[0, :, 0].tolist()) == data[0, :, 0].tolist()
    np.testing.assert_array_equal(got[1] - got[0], np.full((5, 3), 15))


def test_bad_arguments():
    with pytest.raises(ValueError, match="last_batch_handle"):
        NDArrayIter(np.zeros((3, 1)), last_batch_handle="keep")
    with pytest.raises(ValueError, match="batch_size"):
        NDArrayIter(np.zeros((3, 1)), batch_size=0)
    with pytest.raises(ValueError, match="same number of examples"):
        NDArrayIter(np.zeros((3, 1)), np.zeros(4))
    with pytest.raises(TypeError, match="'data'"):
        NDArrayIter({"data": object()})
    with pytest.raises(ValueError, match="must not be None"):
        NDArrayIter(None)


def test_base_classes():
    desc = DataDesc("x", (2, 3))
    name, shape = desc
    assert (name, shape, desc.dtype, desc.layout) == ("x", (2, 3), np.float32, "NCHW")
    assert repr(desc) == "DataDesc[x,(2, 3),<class 'numpy.float32'>,NCHW]"
    assert DataDesc.get_batch_axis("TNC") == 1 and DataDesc.get_batch_axis(None) == 0
    descs = DataDesc.get_list([("a", (1,)), ("b", (2,))], [("a", np.int32), ("b", np.float16)])
    assert [d.dtype for d in descs] == [np.int32, np.float16]
    batch = DataBatch([nd.zeros((2, 3))], [nd.zeros((2,))], pad=1)
    assert str(batch) == "DataBatch: data shapes: [(2, 3)] label shapes: [(2,)]"
    with pytest.raises(TypeError, match="'data'"):
        DataBatch(nd.zeros((2,)))

    class Count(DataIter):
        def __init__(self):
            super().__init__(batch_size=1)
            self.i = 0

        def iter_next(self):
            self.i += 1
            return self.i <= 2

        def getdata(self):
            return [nd.full((1,), self.i)]

        def getlabel(self):
            return None

        def getpad(self):
            return 0

    assert [b.data[0].asnumpy()[0] for b in Count()] == [1, 2]
