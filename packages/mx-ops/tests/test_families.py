"""The family layout of mx_ops (README.md): the family table of
mx_ops/ops/__init__.py agrees with the folders, their meson.build files and
their imports; every built-in operator belongs to exactly one family; the
loader refuses an unknown family or a cycle; the dtype table agrees with
the kernel ABI header."""
import ast
import pathlib
import re

import pytest

import mx_ops
from mx_ops import ops
from mx_ops.core import dtypes

ROOT = pathlib.Path(mx_ops.__file__).resolve().parent
OPS = ROOT / "ops"


def _meson_strings(path):
    """The string literals of a meson.build, comments left out."""
    return re.findall(r"'([^']+)'", re.sub(r"#.*", "", path.read_text()))


def test_table_matches_folders_and_meson():
    folders = {p.name for p in OPS.iterdir() if (p / "__init__.py").is_file()}
    assert set(ops.FAMILIES) == folders
    assert set(_meson_strings(OPS / "meson.build")) - {"__init__.py", "mx_ops/ops"} == folders
    for name, needs in ops.FAMILIES.items():
        assert set(needs) <= set(ops.FAMILIES), name


@pytest.mark.parametrize("family", sorted(ops.FAMILIES))
def test_meson_lists_every_source(family):
    """A module missing from a family's meson.build would work in the dev
    set-up and be missing from a wheel."""
    folder = OPS / family
    listed = set(_meson_strings(folder / "meson.build"))
    for path in folder.iterdir():
        if path.suffix in (".py", ".pxd"):
            assert path.name in listed, f"{family}/meson.build does not install {path.name}"
        elif path.suffix == ".pyx":
            assert path.stem in listed, f"{family}/meson.build does not build {path.name}"


def _imported_families(path):
    """The families whose modules ``path`` imports (or cimports)."""
    text = path.read_text()
    if path.suffix == ".py":
        names = set()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module)
            elif isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
    else:
        names = set(re.findall(r"^\s*from\s+([\w.]+)\s+c?import", text, re.M))
    return {n.split(".")[2] for n in names if n.startswith("mx_ops.ops.") and n.count(".") >= 2}


@pytest.mark.parametrize("family", sorted(ops.FAMILIES))
def test_imports_only_declared_families(family):
    allowed = {family, *ops.FAMILIES[family]}
    for path in sorted((OPS / family).glob("*.py*")):
        used = _imported_families(path)
        assert used <= allowed, (f"ops/{family}/{path.name} imports families "
                                 f"{sorted(used - allowed)} that the table does not list")


def test_every_operator_in_exactly_one_family():
    seen = {}
    for family, names in ops.OPERATORS.items():
        assert names, f"family {family} registered no operator"
        for name in names:
            assert name not in seen, f"{name} registered by {seen[name]} and {family}"
            seen[name] = family
    assert set(ops.OPERATORS) == set(ops.FAMILIES)
    # The family names as MXNet spells them come through the registry.
    for name in ("elemwise_add", "Reshape", "Concat", "dot", "sum", "FullyConnected",
                 "SoftmaxOutput", "BatchNorm", "LRN", "Dropout", "sgd_update", "add_n"):
        assert mx_ops.get(name).name in seen, name


def test_gradients_and_partial_rules_are_wired():
    """The makers and rules each family sets on its own operators."""
    for name in ("elemwise_mul", "transpose", "dot", "argmax", "add_n", "Concat", "take",
                 "gather_nd", "where", "Cast", "reshape_like", "BatchNorm", "Dropout",
                 "Embedding", "SoftmaxOutput", "FullyConnected", "sum", "_slice_assign"):
        assert mx_ops.get(name).gradient is not None, name
    for name in ("Concat", "dot", "Reshape", "broadcast_add", "BatchNorm", "Embedding",
                 "Dropout", "sgd_update", "Cast", "SoftmaxOutput", "FullyConnected"):
        assert mx_ops.get(name).infer_shape_partial is not None, name
    for name in ("Cast", "one_hot", "where", "take", "gather_nd", "BatchNorm", "Embedding"):
        assert mx_ops.get(name).infer_type_partial is not None, name


def test_loader_refuses_unknown_family_and_cycle(monkeypatch):
    monkeypatch.setattr(ops, "FAMILIES", {"a": ("b",), "b": ("c",), "c": ("a",), "d": ("e",)})
    monkeypatch.setattr(ops, "OPERATORS", {})
    with pytest.raises(ops.FamilyTableError, match="cycle: a -> b -> c -> a"):
        ops.load("a")
    with pytest.raises(ops.FamilyTableError, match="no family 'e' in the table.*needed by 'd'"):
        ops.load("d")
    assert ops.OPERATORS == {}


def test_dtype_table_matches_the_abi_header():
    header = (ROOT / "include" / "mx_ops" / "tblob.h").read_text()
    enum = dict(re.findall(r"MX_(\w+) = (\d+)", header.split("enum MXDType", 1)[1].split("}")[0]))
    assert {name.lower(): int(v) for name, v in enum.items()} == dtypes.DTYPE_FLAGS
    assert dtypes.DTYPE_NAMES == tuple(sorted(dtypes.DTYPE_FLAGS, key=dtypes.DTYPE_FLAGS.get))
    assert [d.name for d in dtypes.NP_DTYPES] == list(dtypes.DTYPE_NAMES)
    assert not set(dtypes.OTHER_FLAGS.values()) & set(dtypes.DTYPE_FLAGS.values())


def test_every_gpu_compute_resolves_to_a_function():
    """gpu_compute imports its twin by dotted path (and calls a factory with
    its arguments) on the first GPU call: a wrong path, or a factory that
    returns nothing, would otherwise only show on a GPU."""
    pytest.importorskip("cupy", reason="the twins import CuPy")
    from mx_ops.core import registry
    ops.load_all()
    twins = {name: op.compute["gpu"] for name, op in registry._canonical.items()
             if hasattr(op.compute.get("gpu"), "resolve")}
    assert len(twins) > 200
    for name, run in twins.items():
        assert callable(run.resolve()), name
