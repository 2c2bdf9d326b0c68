"""The operator families: one folder each (registrations with their
inference rules and gradient makers, Cython/C++ kernels, CuPy twin, own
meson.build), loaded from the table below.

A family lists the families whose modules it imports or whose operators its
registration uses (a kernel module, a registered compute); ``load`` imports
those first and refuses an unknown name or a cycle, so no family depends on
the order of this table.  A family's ``__init__.py`` wires its own modules:
its OpDefs first, then its gradient makers and partial inference rules.
tests/test_families.py checks the table against the folders, the imports
and the registry.
"""
import importlib

from mx_ops.core import registry

# family: the families it needs.
FAMILIES = {
    "elemwise": (),
    "init": (),
    "join": (),
    "shape": ("elemwise", "join"),
    "dot": (),
    "select": (),
    "assign": ("shape",),
    "reduce": ("init",),
    "index": ("init",),
    "nd_index": ("init", "shape"),
    "random": ("init",),
    "like": ("elemwise", "init", "reduce", "shape"),
    "elemwise_sum": ("elemwise",),
    "cross_device_copy": ("elemwise",),
    "nn": (),
    "loss": ("nn",),
    "layer": ("loss",),
    "norm": ("reduce",),
    "dropout": (),
    "optimizer": ("sparse",),
    "layout": ("elemwise", "join", "shape"),
    "sequence": (),
    "sort": (),
    "linalg": ("elemwise",),
    "attention": (),
    "diag": (),
    "histogram": ("init",),
    "contrib_index": ("init",),
    "contrib_math": (),
    "rnn": (),
    "spatial": (),
    "vision": ("loss",),
    "sparse": ("elemwise", "elemwise_sum", "init", "reduce", "select", "shape"),
}

# family: the names of the operators it registered (filled by load).
OPERATORS = {}


class FamilyTableError(ImportError):
    """The family table names an unknown family or has a cycle."""


def load(name, _loading=()):
    """Imports family ``name`` after the families it needs; records the
    operators it registers in OPERATORS.  Idempotent."""
    if name in OPERATORS:
        return
    if name not in FAMILIES:
        raise FamilyTableError(f"mx_ops.ops: no family {name!r} in the table"
                               + (f" (needed by {_loading[-1]!r})" if _loading else ""))
    if name in _loading:
        cycle = " -> ".join(_loading[_loading.index(name):] + (name,))
        raise FamilyTableError(f"mx_ops.ops: the family table has a cycle: {cycle}")
    for need in FAMILIES[name]:
        load(need, _loading + (name,))
    before = set(registry.list_ops())
    importlib.import_module(f"mx_ops.ops.{name}")
    OPERATORS[name] = frozenset(set(registry.list_ops()) - before)


def load_all():
    """Loads every family of the table."""
    for name in FAMILIES:
        load(name)
