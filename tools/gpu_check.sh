#!/usr/bin/env bash
# The GPU checks in one run, on a machine with a CUDA device, CuPy, pytest,
# pytest-xdist, pytest-timeout, Hypothesis and SciPy installed:
#   bash tools/gpu_check.sh WHEEL_DIR OUT_DIR [TEST_SECONDS] [PYTEST ARGS...]
# installs the wheel(s) built here for that machine's Python (python3; no
# index is asked), runs the gpu-marked suite on up to 12 xdist workers, then
# benchmarks/compare_gpu.py and benchmarks/profile_gpu_dispatch.py.  Logs, a
# JUnit file and the benchmarks' output land in OUT_DIR.  TEST_SECONDS
# (default 330) bounds the suite, so a hang costs its time and no more.
# Build the wheel with that Python's version:
#   pythonX.Y -m pip wheel --no-build-isolation --no-deps . \
#       -Csetup-args=-Dpackages=true -Cbuild-dir=build/cpXY -w WHEEL_DIR
set -uo pipefail
cd "$(dirname "$0")/.."
wheels=$1 out=$2 budget=${3:-330}
shift 3 2>/dev/null || shift $#
site=/tmp/mx-site
python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" "$wheels"/*.whl || exit 1
export PYTHONPATH=$site PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -c 'import mx, cupy; print("mx", mx.__file__, "cupy", cupy.__version__,
            "devices", cupy.cuda.runtime.getDeviceCount())' || exit 1
workers=$(( $(nproc) < 12 ? $(nproc) : 12 ))
# The checkout's packages/ folders are not on sys.path, so the installed
# extensions are the ones tested (the top-level mx/ is pure Python).
# SIGINT at the budget: pytest still prints the failures it has seen.
timeout -s INT -k 30 "$budget" python3 -m pytest -m gpu -q -p no:cacheprovider -n "$workers" \
  --timeout 120 --tb=short -rfE --junitxml="$out/gpu_junit.xml" "$@" 2>&1 \
  | tee "$out/gpu_tests.log" | grep -v "^[.sFEx]*\( *\[ *[0-9]*%\]\)\?$" | tail -300
echo "gpu suite exit: ${PIPESTATUS[0]}"
timeout -k 10 100 python3 benchmarks/compare_gpu.py --json "$out/gpu_bench.json" 2>&1 \
  | tee "$out/gpu_bench.txt"
timeout -k 10 60 python3 benchmarks/profile_gpu_dispatch.py 2>&1 | tee "$out/gpu_dispatch.txt"
