#!/usr/bin/env bash
# The GPU checks in one run, on a machine with a CUDA device, CuPy, pytest,
# pytest-xdist, pytest-timeout, Hypothesis and SciPy installed:
#   bash tools/gpu_check.sh WHEEL_DIR OUT_DIR [TEST_SECONDS] [PYTEST ARGS...]
# installs the wheels in WHEEL_DIR into python3's environment (no index is
# asked; a lent machine starts bare and is thrown away, elsewhere put a
# venv's python3 first on PATH): mx's wheel built here for that machine's
# Python, and mpi4py's and mpich's (the dist_sync_device GPU test starts a
# job through MPICH's mpiexec).  Then it runs the gpu-marked suite on up to
# 12 xdist workers, benchmarks/compare_gpu.py, benchmarks/profile_gpu_dispatch.py
# and compare_kvstore_local.py's GPU rows ('device' against 'nccl').  Logs,
# a JUnit file and the benchmarks' output land in OUT_DIR.  TEST_SECONDS
# (default 330) bounds the suite, so a hang costs its time and no more.
# Build and fetch the wheels here with that Python's version:
#   pythonX.Y -m pip wheel --no-build-isolation --no-deps . \
#       -Csetup-args=-Dpackages=true -Cbuild-dir=build/cpXY -w WHEEL_DIR
#   python3 -m pip download --no-deps --only-binary=:all: --python-version X.Y \
#       --platform manylinux_2_28_x86_64 --platform manylinux_2_5_x86_64 -d WHEEL_DIR mpi4py mpich
set -uo pipefail
cd "$(dirname "$0")/.."
wheels=$1 out=$2 budget=${3:-330}
shift 3 2>/dev/null || shift $#
python3 -m pip install -q --no-index --no-deps --no-compile --force-reinstall "$wheels"/*.whl \
  || exit 1
export PYTHONUNBUFFERED=1
# CuPy's NCCL bindings load libnccl from the nvidia-nccl wheel where one is installed
nccl=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' \
       2>/dev/null) && export LD_LIBRARY_PATH=$nccl${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -c 'import mx, cupy; from cupy.cuda import nccl
print("mx", mx.__file__, "cupy", cupy.__version__, "devices",
      cupy.cuda.runtime.getDeviceCount(), "nccl", nccl.available)' || exit 1
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
timeout -k 10 60 python3 benchmarks/compare_kvstore_local.py --quick 2>&1 | tee "$out/gpu_kvstore.txt"
