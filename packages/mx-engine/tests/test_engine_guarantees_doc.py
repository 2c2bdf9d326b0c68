"""The README's "What the engine guarantees" names a test after each
sentence: every one of them must exist, so a guarantee never loses its
check silently."""
import ast
import pathlib
import re

import pytest

TESTS = pathlib.Path(__file__).parent
README = TESTS.parents[2] / "README.md"


def _section():
    if not README.exists():            # installed from a wheel, without the repository
        pytest.skip("the repository's README.md is not here")
    text = README.read_text()
    start = text.index("### What the engine guarantees")
    return text[start:text.index("\n### ", start + 1)]


def _references():
    return re.findall(r"`([\w./-]+\.py)::(\w+)`", _section())


def test_every_guarantee_names_a_test():
    paragraphs = [p for p in re.split(r"\n- ", _section())[1:]]
    assert len(paragraphs) >= 15
    for p in paragraphs:
        assert re.search(r"\.py::\w+", p), f"a guarantee without a test: {p[:80]!r}"


@pytest.mark.parametrize("path, name", _references() if README.exists() else [])
def test_each_named_test_exists(path, name):
    from_root = path.startswith(("tests/", "packages/"))
    file = (TESTS.parents[2] / path) if from_root else (TESTS / path)
    assert file.exists(), f"{path} is not there"
    tree = ast.parse(file.read_text())
    names = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    assert name in names, f"{path} has no test {name}"
