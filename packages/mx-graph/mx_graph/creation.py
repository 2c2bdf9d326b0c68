"""``mx.sym``'s creation functions and frontends with MXNet 1.9.1's
signatures: eye and linspace (the _eye and _linspace operators; ``name``
and ``attr`` name the node and set its attributes, dtype defaults to
float32) and histogram (a number of bins with a range, or a symbol of
bin edges, the _histogram operator)."""
import numpy as np


def _dtype(dtype):
    return "float32" if dtype is None else np.dtype(dtype).name


def _create(op_name, params, kwargs):
    from mx_graph import op_functions
    kwargs = dict(kwargs)
    name, attr = kwargs.pop("name", None), kwargs.pop("attr", None)
    return op_functions.create(op_name, [], {}, dict(kwargs, **params), name=name, attr=attr)


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
