"""DataDesc, DataBatch and DataIter: what every iterator speaks (MXNet 1.9.1's
``mx.io`` base classes)."""
from collections import namedtuple

import numpy as np

__all__ = ["DataDesc", "DataBatch", "DataIter"]


class DataDesc(namedtuple("DataDesc", ["name", "shape"])):
    """The name, shape, dtype and layout of one input or label.

    A ``(name, shape)`` namedtuple, so code that unpacks ``name, shape = desc``
    keeps working; ``dtype`` (default float32) and ``layout`` (default
    ``'NCHW'``: N marks the batch axis) ride along as attributes.
    """

    def __new__(cls, name, shape, dtype=np.float32, layout="NCHW"):
        desc = super().__new__(cls, name, shape)
        desc.dtype = dtype
        desc.layout = layout
        return desc

    def __repr__(self):
        return f"DataDesc[{self.name},{self.shape},{self.dtype},{self.layout}]"

    @staticmethod
    def get_batch_axis(layout):
        """The axis of ``layout`` that holds the batch ('N'); 0 without a
        layout, -1 when the layout has no N (the array is copied whole to each
        device)."""
        if layout is None:
            return 0
        return layout.find("N")

    @staticmethod
    def get_list(shapes, types):
        """DataDescs from ``[(name, shape)]`` and, when given, ``[(name, dtype)]``."""
        if types is None:
            return [DataDesc(name, shape) for name, shape in shapes]
        dtypes = dict(types)
        return [DataDesc(name, shape, dtypes[name]) for name, shape in shapes]


class DataBatch:
    """One batch: ``data`` and ``label`` are lists of arrays with ``batch_size``
    examples each; ``pad`` counts the examples at the end that only fill the
    batch; ``index`` holds the examples' indices where the iterator knows
    them; ``bucket_key``, ``provide_data``/``provide_label`` serve bucketing."""

    def __init__(self, data, label=None, pad=None, index=None, bucket_key=None,
                 provide_data=None, provide_label=None):
        if data is not None and not isinstance(data, (list, tuple)):
            raise TypeError(f"DataBatch: argument 'data' must be a list of NDArrays, got "
                            f"{type(data).__name__}")
        if label is not None and not isinstance(label, (list, tuple)):
            raise TypeError(f"DataBatch: argument 'label' must be a list of NDArrays, got "
                            f"{type(label).__name__}")
        self.data = data
        self.label = label
        self.pad = pad
        self.index = index
        self.bucket_key = bucket_key
        self.provide_data = provide_data
        self.provide_label = provide_label

    def __str__(self):
        data_shapes = [d.shape for d in self.data]
        label_shapes = [l.shape for l in self.label] if self.label else None
        return f"{type(self).__name__}: data shapes: {data_shapes} label shapes: {label_shapes}"


class DataIter:
    """The base of every data iterator: a Python iterator of DataBatch.

    Subclasses implement ``iter_next`` (advance; False at the end) and
    ``getdata``/``getlabel``/``getpad``/``getindex`` (the current batch), or
    override ``next`` directly; ``reset`` rewinds to the first batch.
    """

    def __init__(self, batch_size=0):
        self.batch_size = batch_size

    def __iter__(self):
        return self

    def reset(self):
        """Rewinds to the first batch."""

    def next(self):
        """The next DataBatch; StopIteration at the end of the data."""
        if self.iter_next():
            return DataBatch(data=self.getdata(), label=self.getlabel(), pad=self.getpad(),
                             index=self.getindex())
        raise StopIteration

    def __next__(self):
        return self.next()

    def iter_next(self):
        """Moves to the next batch; whether there was one."""

    def getdata(self):
        """The data arrays of the current batch."""

    def getlabel(self):
        """The label arrays of the current batch."""

    def getindex(self):
        """The indices of the current batch's examples, or None."""
        return None

    def getpad(self):
        """How many examples at the end of the current batch are padding."""
