"""Writes rows_mxnet191.json: MXNet 1.9.1's dist_sync (ps-lite, 2 workers,
1 or 2 servers, the scheduler on 127.0.0.1) running the very script the
mpi-marked row_sparse test runs on ours, tests/kvstore_dist/row_sparse.py:
row_sparse pushes summed over two rounds, row_sparse_pull of every row,
then lazy SGD on the servers; with 2 servers and
MXNET_KVSTORE_BIGARRAY_BOUND=60 the 50x3 key is split by rows.

    OPENBLAS_CORETYPE=Haswell /tmp/mxnet-venv/bin/python \\
        tests/data/kvstore_dist/make_rows_reference.py

(make_dist_reference.py starts the roles.)"""
import json
import os
import pathlib
import sys

HERE = pathlib.Path(__file__).parent
sys.path.insert(0, str(HERE))

from make_dist_reference import SCRIPTS, run_mxnet  # noqa: E402


def main():
    import mxnet
    record = {"mxnet": mxnet.__version__, "script": "tests/kvstore_dist/row_sparse.py",
              "servers": {}}
    for servers, port in ((1, 9401), (2, 9402)):
        os.environ["MXNET_KVSTORE_BIGARRAY_BOUND"] = "60"
        reports = run_mxnet(SCRIPTS / "row_sparse.py", servers=servers, port=port)
        record["servers"][str(servers)] = {str(k): v for k, v in sorted(reports.items())}
    (HERE / "rows_mxnet191.json").write_text(json.dumps(record) + "\n")
    print("wrote", HERE / "rows_mxnet191.json")


if __name__ == "__main__":
    main()
