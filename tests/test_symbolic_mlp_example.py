"""The design notes' symbolic MLP (examples/symbolic_mlp.py) trains to
accuracy above 0.95, as the notes assert."""
import importlib.util
import pathlib

EXAMPLE = pathlib.Path(__file__).resolve().parents[1] / "examples" / "symbolic_mlp.py"


def test_symbolic_mlp_reaches_the_notes_accuracy(capsys):
    spec = importlib.util.spec_from_file_location("symbolic_mlp", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    accuracy = module.main()
    assert accuracy > 0.95
    printed = capsys.readouterr().out
    assert "fc1_weight (128, 100)" in printed
    assert "iteration 90, accuracy" in printed
