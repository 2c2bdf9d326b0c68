"""python -m mx_io.im2rec against MXNet 1.9.1's tools/im2rec.py: every
reference run of tests/data/im2rec (make_mxnet_im2rec.py) is repeated here
and must give the same .lst, .rec and .idx bytes."""
import glob
import json
import os
import shutil
import subprocess
import sys

import pytest

from mx_io import im2rec, recordio

HERE = os.path.join(os.path.dirname(__file__), "data", "im2rec")
IMAGES = os.path.join(HERE, "images")
with open(os.path.join(HERE, "runs.json")) as _f:
    RUNS = {run["name"]: run for run in json.load(_f)}


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def outputs(folder, name, exts):
    """{file name: bytes} of ``folder``'s files made by run ``name``."""
    found = {}
    for ext in exts:
        for path in glob.glob(os.path.join(folder, glob.escape(name) + "*" + ext)):
            found[os.path.basename(path)] = read_bytes(path)
    return found


@pytest.mark.parametrize("name", ["all", "split", "chunked", "flat"])
def test_lists_match_mxnet(tmp_path, capsys, name):
    run = RUNS[name]
    im2rec.main([str(tmp_path / name), IMAGES] + run["args"])
    assert capsys.readouterr().out == run["stdout"]
    ours = outputs(tmp_path, name, [".lst"])
    assert ours and ours == outputs(HERE, name, [".lst"])


@pytest.mark.parametrize("name", ["jpg", "crop", "gray", "raw", "multi"])
@pytest.mark.parametrize("threads", ["1", "3"])
def test_records_match_mxnet(tmp_path, capsys, name, threads):
    run = RUNS[name]
    shutil.copy(os.path.join(HERE, name + ".lst"), tmp_path)
    args = list(run["args"])
    args[args.index("--num-thread") + 1] = threads
    im2rec.main([str(tmp_path / name), IMAGES] + args)
    ours = outputs(tmp_path, name, [".rec", ".idx"])
    assert set(ours) == {name + ".rec", name + ".idx"}
    assert ours == outputs(HERE, name, [".rec", ".idx"])
    err = capsys.readouterr().err
    if name != "raw":      # pass-through packs the broken file's bytes as they are
        assert "skipped image 6: cannot read" in err and "broken.jpg" in err


def test_multi_labels_are_packed():
    rec = recordio.MXIndexedRecordIO(os.path.join(HERE, "multi.idx"),
                                     os.path.join(HERE, "multi.rec"), "r")
    header, _ = recordio.unpack(rec.read_idx(9))
    assert header.flag == 3 and list(header.label) == [2.0, 2.25, -1.5] and header.id == 9


def test_bad_list_lines_are_reported_and_skipped(tmp_path, capsys):
    (tmp_path / "bad.lst").write_text("0\t1.0\timg10.jpg\nnot a line\n"
                                      "x\t1.0\timg9.png\n2\t0.0\timg9.png\n")
    im2rec.main([str(tmp_path / "bad"), IMAGES])
    err = capsys.readouterr().err
    assert "bad.lst:2: skipped" in err and "bad.lst:3: skipped" in err
    rec = recordio.MXIndexedRecordIO(tmp_path / "bad.idx", tmp_path / "bad.rec", "r")
    assert rec.keys == [0, 2]


def test_runs_as_a_module(tmp_path):
    out = subprocess.run([sys.executable, "-m", "mx_io.im2rec", "--list", "--recursive",
                          str(tmp_path / "m"), IMAGES], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert read_bytes(tmp_path / "m.lst") == read_bytes(os.path.join(HERE, "all.lst"))
    out = subprocess.run([sys.executable, "-m", "mx_io.im2rec", "--help"], capture_output=True,
                         text=True, timeout=120)
    for option in ["--list", "--recursive", "--train-ratio", "--test-ratio", "--exts",
                   "--resize", "--center-crop", "--quality", "--encoding", "--color",
                   "--num-thread", "--pack-label", "--pass-through", "--shuffle",
                   "--no-shuffle", "--chunks"]:
        assert option in out.stdout


def test_progress_lines_without_tqdm(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)           # import tqdm fails
    shutil.copy(os.path.join(HERE, "jpg.lst"), tmp_path)
    im2rec.main([str(tmp_path / "jpg"), IMAGES, "--resize", "16", "--quality", "90"])
    assert "count: 0" in capsys.readouterr().out
    assert read_bytes(tmp_path / "jpg.rec") == read_bytes(os.path.join(HERE, "jpg.rec"))


def test_missing_image_is_reported_and_skipped(tmp_path, capsys):
    (tmp_path / "m.lst").write_text("0\t1.0\tnowhere.jpg\n1\t0.0\timg9.png\n")
    im2rec.main([str(tmp_path / "m"), IMAGES, "--num-thread", "2"])
    assert "skipped image 0: cannot read" in capsys.readouterr().err
    rec = recordio.MXIndexedRecordIO(tmp_path / "m.idx", tmp_path / "m.rec", "r")
    assert rec.keys == [1]
