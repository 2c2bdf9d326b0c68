"""benchmarks/compare_optimizer.py runs (--quick: ours only, small arrays)."""
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_compare_optimizer_quick():
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "compare_optimizer.py"),
                           "--quick"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    adam = next(line for line in proc.stdout.splitlines() if line.startswith("Adam"))
    assert " ms" in adam
