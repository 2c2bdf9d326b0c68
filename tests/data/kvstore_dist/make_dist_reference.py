"""Writes dist_mxnet191.json: MXNet 1.9.1's dist_sync (ps-lite, 2 workers
+ 1 server + the scheduler on 127.0.0.1) running the very script the
mpi-marked test runs on ours, tests/kvstore_dist/sync_sums.py: sums over rounds,
a list of two values per key, pushpull, then SGD (momentum, wd,
rescale_grad) on the server over three rounds.

    OPENBLAS_CORETYPE=Haswell /tmp/mxnet-venv/bin/python \\
        tests/data/kvstore_dist/make_dist_reference.py

The script imports ``mx``; a shim directory maps that name to mxnet.
MXNet's tools/launch.py is not in the wheel: the roles are started here by
hand with DMLC_ROLE / DMLC_PS_ROOT_URI / DMLC_PS_ROOT_PORT /
DMLC_NUM_SERVER / DMLC_NUM_WORKER."""
import json
import os
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).parent
SCRIPTS = HERE.parent.parent / "kvstore_dist"


def run_mxnet(script, workers=2, servers=1, port=9391, timeout=120):
    """Runs ``script`` on MXNet's ps-lite roles; the workers' REPORT dicts."""
    with tempfile.TemporaryDirectory() as shim:
        pathlib.Path(shim, "mx.py").write_text(
            "import sys, mxnet\nsys.modules['mx'] = mxnet\n")
        env = dict(os.environ, DMLC_PS_ROOT_URI="127.0.0.1", DMLC_PS_ROOT_PORT=str(port),
                   DMLC_NUM_SERVER=str(servers), DMLC_NUM_WORKER=str(workers),
                   OPENBLAS_CORETYPE="Haswell",
                   PYTHONPATH=os.pathsep.join([shim, str(SCRIPTS)]))
        roles = ["scheduler"] + ["server"] * servers + ["worker"] * workers
        procs = [subprocess.Popen([sys.executable, str(script)], env=dict(env, DMLC_ROLE=r),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for r in roles]
        reports = {}
        for p in procs:
            out, err = p.communicate(timeout=timeout)
            if p.returncode != 0:
                raise RuntimeError(f"{script} failed ({p.returncode}):\n{out}\n{err}")
            for line in out.splitlines():
                if line.startswith("REPORT "):
                    r = json.loads(line[7:])
                    reports[r["rank"]] = r
        return reports


def main():
    import mxnet
    reports = run_mxnet(SCRIPTS / "sync_sums.py")
    record = {"mxnet": mxnet.__version__, "script": "tests/kvstore_dist/sync_sums.py",
              "workers": {str(k): v for k, v in sorted(reports.items())}}
    (HERE / "dist_mxnet191.json").write_text(json.dumps(record) + "\n")
    print("wrote", HERE / "dist_mxnet191.json", "for", sorted(reports))


if __name__ == "__main__":
    main()
