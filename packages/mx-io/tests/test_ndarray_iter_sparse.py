"""NDArrayIter over CSRNDArray sources against MXNet 1.9.1's batches
(data/sparse_iter_ref.npz, made by make_mxnet_sparse_iter.py) and SciPy."""
import os

import numpy as np
import pytest
import scipy.sparse as sp

import mx_ndarray as nd
from mx_ndarray.sparse import CSRNDArray
from mx_io.io import NDArrayIter

REF = np.load(os.path.join(os.path.dirname(__file__), "data", "sparse_iter_ref.npz"))
DENSE = REF["source"]
LABELS = np.arange(11, dtype=np.float32)


def csr():
    return nd.array(DENSE).tostype("csr")


def cases():
    return {
        "plain": dict(data=csr(), label=LABELS, batch_size=3),
        "shuffle": dict(data=csr(), label=LABELS, batch_size=4, shuffle=True),
        "csr_label": dict(data=LABELS, label=csr(), batch_size=5, shuffle=True),
    }


@pytest.mark.parametrize("name", ["plain", "shuffle", "csr_label"])
def test_csr_batches_match_mxnet(name):
    np.random.seed(0)
    it = NDArrayIter(last_batch_handle="discard", **cases()[name])
    for epoch in range(2):
        batches = list(it)
        assert len(batches) == sum(1 for k in REF.files
                                   if k.startswith(f"{name}_{epoch}_") and k.endswith("_data"))
        for b, batch in enumerate(batches):
            sparse_side = batch.label[0] if name == "csr_label" else batch.data[0]
            assert isinstance(sparse_side, CSRNDArray)
            sparse_side.check_format()
            np.testing.assert_array_equal(batch.data[0].asnumpy(),
                                          REF[f"{name}_{epoch}_{b}_data"])
            np.testing.assert_array_equal(batch.label[0].asnumpy(),
                                          REF[f"{name}_{epoch}_{b}_label"])
            assert batch.pad == 0
        it.reset()


def test_scipy_source_and_provide_data():
    it = NDArrayIter(sp.csr_matrix(DENSE), LABELS, batch_size=4, last_batch_handle="discard")
    assert it.provide_data[0].shape == (4, 7)
    batch = it.next()
    assert isinstance(batch.data[0], CSRNDArray)
    np.testing.assert_array_equal(batch.data[0].asscipy().toarray(), DENSE[:4])


@pytest.mark.parametrize("handle", ["pad", "roll_over"])
def test_csr_needs_discard_as_mxnet(handle):
    with pytest.raises(NotImplementedError, match="only supports ``CSRNDArray`` with "
                                                  "`last_batch_handle` set to `discard`"):
        NDArrayIter(csr(), LABELS, batch_size=3, last_batch_handle=handle)
    with pytest.raises(NotImplementedError, match="`discard`"):
        NDArrayIter(LABELS, csr(), batch_size=3, last_batch_handle=handle)


def test_other_sparse_and_layout_errors():
    with pytest.raises(TypeError, match="storage type 'row_sparse'; sparse sources must be "
                                        "CSRNDArray"):
        NDArrayIter(nd.array(DENSE).tostype("row_sparse"), LABELS, batch_size=3,
                    last_batch_handle="discard")
    with pytest.raises(ValueError, match="batches along axis 0"):
        NDArrayIter(csr(), LABELS, batch_size=3, last_batch_handle="discard", layout="CN")
