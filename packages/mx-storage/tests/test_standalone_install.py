"""mx-storage installs with only what it depends on (mx-engine, NumPy) and
works, built as a release is: from its sdist, against mx-engine installed.

Builds the mx-engine wheel, and the mx-storage wheel from mx-storage's
sdist (meson dist: the committed files) unpacked alone, and installs both
with no index and no dependencies into a fresh virtual environment without
system site packages; then runs a small program there.  A missing tool
fails the test instead of skipping it, so CI cannot pass by luck.

Building mx-storage needs mx-engine's .pxd files.  In the checkout its
meson.build reads them from ../mx-engine (tests/test_pip_install.py
installs that way); the unpacked sdist has no sibling, so Cython must find
an installed mx_engine on its sys.path, as in pip's isolated build of the
sdist, where the build backend adds mx-engine==0.1.0 (``[tool.mx]
build-requires``) to the build requirements.  The test installs the
mx-engine wheel into a directory of its own (``pip install --target``) and
puts it on PYTHONPATH for the build; the build tools are this
environment's.  With no sibling beside it, the wheel requires
``mx-engine==0.1.0`` as an index needs, not a direct reference.  NumPy, a
run-time dependency, comes from ``pip download`` of the version installed
here, through pip's own configuration (its index, or a mirror or wheel
directory), then installs with --no-index like the rest.
"""
import pathlib
import sys
import textwrap

import numpy as np
import pytest

import packaging_checks     # mx-engine's tests/packaging_checks.py, registered by conftest.py
from mx_engine import cpu
from mx_storage import _philox, resource

PACKAGE = pathlib.Path(__file__).resolve().parents[1]       # packages/mx-storage
ENGINE = PACKAGE.parent / "mx-engine"
SOURCE = PACKAGE / "mx_storage"
C_API = ["__init__.pxd", "_storage.pxd", "_philox.pxd"]
ABOVE = ["mx", "mx_ops", "mx_ndarray", "mx_graph", "mx_kvstore", "mx_io"]
SEED = 20240607
# Unoptimized builds: the files shipped are the same, and the two builds take
# half the time.  The release flags are what every other test runs.
FAST = ["-Doptimization=0"]

# Runs inside the fresh environment.
PROGRAM = textwrap.dedent("""
    import importlib.util, json
    import numpy as np
    import mx_engine, mx_storage
    from mx_engine import cpu, engine
    from mx_storage import _philox, resource

    ctx = cpu()
    h = mx_storage.alloc(4096, ctx)
    first = h.ptr
    view = mx_storage.as_numpy(h, (32, 32), np.float32)
    view[:] = np.arange(1024, dtype=np.float32).reshape(32, 32)
    total = float(view.sum())
    del view
    mx_storage.free(h)
    try:
        mx_storage.free(h)
        double_free = None
    except ValueError as exc:
        double_free = str(exc)
    h2 = mx_storage.alloc(4096, ctx)          # the block just freed, from the pool
    reused = h2.ptr == first
    mx_storage.free(h2)
    stats = mx_storage.memory_stats(ctx)

    resource.seed(%(seed)d)
    rng = resource.request(ctx, resource.ResourceRequest.RANDOM)
    temp = resource.request(ctx, resource.ResourceRequest.TEMP_SPACE)
    drawn = {}
    def use(rctx):
        drawn["uniform"] = rng.uniform(8).tolist()
        space = temp.get_space((16, 16))
        space[:] = 2.0
        drawn["space"] = [list(space.shape), float(space.sum()), temp.nbytes]
    engine.push_sync(use, ctx, mutate_vars=[rng.var, temp.var])
    engine.wait_for_all()

    print(json.dumps({
        "file": mx_storage.__file__,
        "engine_file": mx_engine.__file__,
        "numpy_file": np.__file__,
        "total": total,
        "double_free": double_free,
        "reused": reused,
        "stats": stats,
        "philox": _philox.uniform(7, 11, 6).tolist(),
        "device_seed": rng.seed,
        "drawn": drawn,
        "above": {name: importlib.util.find_spec(name) is not None for name in %(above)r},
    }))
""") % {"seed": SEED, "above": ABOVE}


@pytest.mark.slow
def test_storage_installs_with_its_dependencies_and_works(tmp_path):
    env = packaging_checks.clean_env()
    wheels = tmp_path / "wheels"
    engine_wheel = packaging_checks.build_wheel(ENGINE, wheels, tmp_path / "build-engine", env,
                                                FAST)

    # mx-engine as a build requirement: a real directory on Cython's sys.path.
    build_deps = tmp_path / "build-deps"
    packaging_checks.run([sys.executable, "-m", "pip", "install", "--no-index", "--no-deps",
                          "--disable-pip-version-check", "--target", build_deps, engine_wheel],
                         "installing the mx-engine wheel as a build requirement", env=env)
    sdist = packaging_checks.sdist_tree(PACKAGE, tmp_path / "sdist", env)
    wheel = packaging_checks.build_wheel(sdist, wheels, tmp_path / "build-storage",
                                         {**env, "PYTHONPATH": str(build_deps)}, FAST)
    packaging_checks.check_wheel_contents(wheel, SOURCE, C_API)
    assert packaging_checks.requires_dist(wheel) == ["mx-engine==0.1.0", "numpy>=2.0"]

    # pip's own configuration (index, mirror, find-links) applies here only.
    packaging_checks.run([sys.executable, "-m", "pip", "download", "--no-deps",
                          "--only-binary=:all:", "--disable-pip-version-check",
                          "-d", tmp_path / "numpy", f"numpy=={np.__version__}"],
                         f"fetching the numpy=={np.__version__} wheel (mx-storage's run-time "
                         "dependency) with pip download: needs pip's index or a mirror",
                         timeout=180)
    (numpy_wheel,) = (tmp_path / "numpy").glob("numpy-*.whl")

    venv = tmp_path / "venv"
    python = packaging_checks.fresh_venv(venv, env)
    packaging_checks.run([python, "-m", "pip", "install", "--no-index", "--no-deps",
                          "--disable-pip-version-check", engine_wheel, wheel, numpy_wheel],
                         "installing the wheels", env=env)
    # mx-storage's declared dependencies are all there, at versions it accepts.
    packaging_checks.run([python, "-m", "pip", "check", "--disable-pip-version-check"],
                         "pip check in the fresh environment", env=env)
    out = packaging_checks.run_program(python, PROGRAM, tmp_path, env)

    packaging_checks.check_installed(out["file"], venv, PACKAGE, C_API)
    packaging_checks.check_installed(out["engine_file"], venv, ENGINE, ["__init__.pxd"])
    packaging_checks.check_installed(out["numpy_file"], venv, PACKAGE, [])
    assert out["total"] == sum(range(1024))
    assert out["double_free"] is not None and "already freed" in out["double_free"]
    assert out["reused"] is True
    assert out["stats"]["in_use"] == 0 and out["stats"]["reused"] >= 1
    # The wheel's generator draws what the development build draws.
    assert out["philox"] == _philox.uniform(7, 11, 6).tolist()
    kind = resource.ResourceRequest.RANDOM
    assert out["device_seed"] == resource._device_seed(SEED, cpu(), kind, 0)
    assert out["drawn"]["uniform"] == _philox.uniform(out["device_seed"], 0, 8).tolist()
    assert out["drawn"]["space"] == [[16, 16], 512.0, 1024]
    leaked = [name for name, present in out["above"].items() if present]
    assert not leaked, f"{leaked} importable in an environment holding only mx-storage"
