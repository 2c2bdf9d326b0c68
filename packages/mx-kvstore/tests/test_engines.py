"""The same MXNet reference cases under the NaiveEngine (every function
run by the pushing thread, at once) as under the threaded engine."""
import os
import pathlib
import subprocess
import sys

RUN = """
import sys, pytest
from mx_engine import engine
code = pytest.main(["-q", "-p", "no:cacheprovider", "test_reference.py", "test_compression.py"])
assert engine.engine_type() == "NaiveEngine", engine.engine_type()
sys.exit(code)
"""


def test_reference_cases_under_the_naive_engine():
    here = pathlib.Path(__file__).parent
    env = dict(os.environ, MXNET_ENGINE_TYPE="NaiveEngine")
    run = subprocess.run([sys.executable, "-c", RUN], capture_output=True, text=True,
                         timeout=300, env=env, cwd=here)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert " passed" in run.stdout
