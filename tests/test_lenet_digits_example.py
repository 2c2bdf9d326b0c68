"""The main job (examples/lenet_digits.py, ``bash dev.sh demo``) runs end to
end: one short epoch trains past chance and writes its checkpoint (loadable
as a Module) and the PNG of its curves."""
import importlib.util
import pathlib

import pytest

import mx

pytest.importorskip("sklearn")
EXAMPLE = pathlib.Path(__file__).resolve().parents[1] / "examples" / "lenet_digits.py"


def test_lenet_digits_trains_checkpoints_and_plots(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("lenet_digits", EXAMPLE)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    accuracy = example.main(["--epochs", "1", "--out", str(tmp_path)])
    assert 0.5 < accuracy <= 1.0
    assert "held-out accuracy" in capsys.readouterr().out
    png = tmp_path / "lenet-curves.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    mod = mx.mod.Module.load(str(tmp_path / "lenet"), 1)
    assert "conv1_weight" in mod._arg_params
