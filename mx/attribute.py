"""``mx.attribute``: AttrScope."""
from mx_graph.attribute import AttrScope  # noqa: F401
