"""Prepared operator calls: the push layer a bound executor calls.

A graph executor (mx-graph) allocates its arrays and decides each node's
reqs once, at bind time, then runs the same nodes on every pass.  A
:class:`PreparedCall` checks one node's operator, arrays and reqs and packs
everything that does not change between passes; ``push(is_train)`` pushes
it to the engine and returns at once, and :func:`push_all` pushes a list of
them in one C loop::

    call = PreparedCall("FullyConnected", params, [x, w, b], [y], ["write"])
    push_all(forward_calls, is_train=True)
"""
from mx_ndarray._ndarray import PreparedCall, push_all

__all__ = ["PreparedCall", "push_all"]
