"""``mx.sym``'s creation functions and frontends with MXNet 1.9.1's
signatures: zeros, ones, full, arange, eye and linspace (the _zeros, _ones,
_full, _arange, _eye and _linspace operators; ``name`` and ``attr`` name the
node and set its attributes, dtype defaults to float32), split_v2 (indices
or a number of sections, the _split_v2 operator) and histogram (a number of
bins with a range, or a symbol of bin edges, the _histogram operator)."""
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


def eye(N, M=0, k=0, dtype=None, **kwargs):
    """A symbol of a 2-D (N, M) array (M=0: N) with ones on the k-th
    diagonal and zeros elsewhere."""
    return _create("_eye", {"N": N, "M": M, "k": k, "dtype": _dtype(dtype)}, kwargs)


def linspace(start, stop, num, endpoint=True, name=None, dtype=None):
    """A symbol of ``num`` evenly spaced values over [start, stop] (without
    ``endpoint``: [start, stop))."""
    return _create("_linspace", {"start": start, "stop": stop, "num": num,
                                 "endpoint": endpoint, "dtype": _dtype(dtype)}, {"name": name})


def histogram(a, bins=10, range=None, **kwargs):    # noqa: A002 (MXNet's argument name)
    """The histogram of ``a``, (counts, edges): ``bins`` uniform bins over
    ``range`` (required in a graph), or a symbol of bin edges."""
    from mx_graph import op_functions
    from mx_graph.symbol import Symbol
    kwargs = dict(kwargs)
    name, attr = kwargs.pop("name", None), kwargs.pop("attr", None)
    if isinstance(bins, Symbol):
        return op_functions.create("_histogram", [a, bins], {}, kwargs, name=name, attr=attr)
    if isinstance(bins, (int, np.integer)) and not isinstance(bins, bool):
        if range is None:
            raise ValueError("null range is not supported in symbol mode")
        return op_functions.create("_histogram", [a], {},
                                   dict(kwargs, bin_cnt=bins, range=range), name=name, attr=attr)
    raise ValueError("bins argument should be either an integer or an NDArray")
