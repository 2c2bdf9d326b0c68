"""``mx.sym``'s creation functions and frontends with MXNet 1.9.1's
signatures: zeros, ones, full, arange (the _zeros, _ones, _full and _arange
operators; ``name`` and ``attr`` name the node and set its attributes,
dtype defaults to float32) and split_v2 (indices or a number of sections,
the _split_v2 operator)."""
import numpy as np


def _dtype(dtype):
    return "float32" if dtype is None else np.dtype(dtype).name


def _create(op_name, params, kwargs):
    from mx_graph import op_functions
    kwargs = dict(kwargs)
    name, attr = kwargs.pop("name", None), kwargs.pop("attr", None)
    return op_functions.create(op_name, [], {}, dict(kwargs, **params), name=name, attr=attr)


def zeros(shape, dtype=None, **kwargs):
    """A symbol of the given shape and dtype (default float32), filled with zeros."""
    return _create("_zeros", {"shape": shape, "dtype": _dtype(dtype)}, kwargs)


def ones(shape, dtype=None, **kwargs):
    """A symbol of the given shape and dtype (default float32), filled with ones."""
    return _create("_ones", {"shape": shape, "dtype": _dtype(dtype)}, kwargs)


def full(shape, val, dtype=None, **kwargs):
    """A symbol of the given shape and dtype (default float32), filled with ``val``."""
    return _create("_full", {"shape": shape, "dtype": _dtype(dtype), "value": float(val)},
                   kwargs)


def arange(start, stop=None, step=1.0, repeat=1, infer_range=False, name=None, dtype=None):
    """Evenly spaced values within [start, stop) (stop None: [0, start)),
    each repeated ``repeat`` times; infer_range takes the length from the
    graph."""
    # MXNet stores stop=None as "None" (a None parameter is otherwise left out)
    stop = "None" if stop is None else stop
    return _create("_arange", {"start": start, "stop": stop, "step": step, "repeat": repeat,
                               "infer_range": infer_range, "dtype": _dtype(dtype)},
                   {"name": name})


def split_v2(ary, indices_or_sections, axis=0, squeeze_axis=False):
    """Splits ``ary`` along ``axis`` into ``indices_or_sections`` equal
    sections (an int) or at the given indices (a tuple)."""
    from mx_graph import op_functions
    indices, sections = [], 0
    if isinstance(indices_or_sections, int):
        sections = indices_or_sections
    elif isinstance(indices_or_sections, tuple):
        indices = [0] + list(indices_or_sections)
    else:
        raise ValueError("indices_or_sections must either int or tuple of ints")
    return op_functions.create("_split_v2", [ary], {},
                               {"indices": tuple(indices), "axis": axis,
                                "squeeze_axis": squeeze_axis, "sections": sections})
