"""``mx.name``: automatic node names (NameManager, Prefix)."""
from mx_graph.name import NameManager, Prefix, current  # noqa: F401
