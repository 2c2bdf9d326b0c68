"""The subprocess side of tests/test_custom_op_lib_abi.py: loads copies of
the fuzz library (abi_fuzz_lib.c) configured to return given values, calls
its operator, and reports what happened, so that a crash or a hang is the
test's failure rather than pytest's death.

Run as ``python abi_probe.py LIBRARY WORKDIR``; each stdin line is a JSON
config (MXFuzzConfig's fields, by name, over the defaults below; '#' in
the name is replaced by the probe's five-digit number), answered
by one stdout line ``RESULT <json>``: for each step reached ('load',
'parse', 'shape', 'type', 'forward', 'gpu_forward', 'backward'), either
{"ok": value} or {"error": class name, "classes": its MRO's names,
"message": text}.
"""
import ctypes
import json
import os
import shutil
import sys
import traceback

import numpy as np

import mx
import mx_ops
from mx_ops import registry
from mx_ops.core.dtypes import DTYPE_NAMES
from mx_ops.ext import _library

FIELDS = [("abi_version", ctypes.c_int32), ("op_count", ctypes.c_int32),
          ("info_status", ctypes.c_int32), ("name_kind", ctypes.c_int32),
          ("info_error_kind", ctypes.c_int32), ("fns", ctypes.c_int32),
          ("parse_status", ctypes.c_int32), ("num_in", ctypes.c_int32),
          ("num_out", ctypes.c_int32), ("shape_status", ctypes.c_int32),
          ("out_ndim", ctypes.c_int32), ("reserved", ctypes.c_int32),
          ("out_dim", ctypes.c_int64), ("type_status", ctypes.c_int32),
          ("out_type", ctypes.c_int32), ("compute_status", ctypes.c_int32),
          ("err_kind", ctypes.c_int32), ("state_status", ctypes.c_int32),
          ("state_null", ctypes.c_int32), ("reserved2", ctypes.c_int32),
          ("name", ctypes.c_char * 512), ("message", ctypes.c_char * 64)]


class MXFuzzConfig(ctypes.Structure):
    _fields_ = FIELDS


# abi_fuzz_lib.c's bits of `fns`.
PARSE, TYPE, SHAPE, FWD_CPU, FWD_GPU, BWD_CPU, BWD_GPU, STATE_CPU, STATE_GPU = (
    1 << i for i in range(9))

# A valid one-input, one-output operator of shape (2, 3) and float32 that
# fills its output; the probes change some of these.
DEFAULTS = {
    "abi_version": _library.ABI_VERSION, "op_count": 1, "info_status": 1, "name_kind": 0,
    "info_error_kind": 1, "fns": PARSE | TYPE | SHAPE | FWD_CPU | FWD_GPU | BWD_CPU,
    "parse_status": 1, "num_in": 1, "num_out": 1, "shape_status": 1, "out_ndim": 2,
    "out_dim": 3, "type_status": 1, "out_type": 0, "compute_status": 1, "err_kind": 0,
    "state_status": 1, "state_null": 0, "message": "fuzz says no",
}
IN_SHAPE = (2, 3)
# Outputs bigger than this are inferred, not computed.
MAX_COMPUTE_BYTES = 1 << 16


def _outcome(fn):
    try:
        return {"ok": fn()}
    except Exception as exc:   # reported to the test, which judges it
        return {"error": type(exc).__name__,
                "classes": [c.__name__ for c in type(exc).__mro__],
                "message": str(exc)}


def _configure(handle, config, name):
    cfg = MXFuzzConfig.in_dll(handle, "mxfuzz")
    size = ctypes.CFUNCTYPE(ctypes.c_int32)(("mxfuzz_config_size", handle))()
    assert size == ctypes.sizeof(MXFuzzConfig), (size, ctypes.sizeof(MXFuzzConfig))
    for key, value in {**DEFAULTS, "name": name, **config}.items():
        setattr(cfg, key, value.encode() if isinstance(value, str) else value)


def _filled(arrays):
    """Every byte of every array is 1: the library's forward wrote them."""
    return all(bool((np.asarray(a).view(np.uint8) == 1).all()) for a in arrays)


def _calls(name, result):
    """Parse, infer and (for small outputs) compute, stopping at a failure."""
    op = registry.get(name)
    core = op.core
    attrs = {"k": "1"}
    result["parse"] = _outcome(lambda: core.parse(attrs)[1:])
    if "ok" not in result["parse"]:
        return
    nin, nout = result["parse"]["ok"]
    in_shapes = [IN_SHAPE] * nin
    result["shape"] = _outcome(lambda: [list(s) for s in op.infer_shape(attrs, in_shapes)])
    result["type"] = _outcome(lambda: op.infer_type(attrs, ["float32"] * nin))
    if "ok" not in result["shape"] or "ok" not in result["type"]:
        return
    sizes = [int(np.prod(s, dtype=object)) * np.dtype(t).itemsize
             for s, t in zip(result["shape"]["ok"], result["type"]["ok"])]
    if sum(sizes) > MAX_COMPUTE_BYTES:
        return
    xs = [np.ones(IN_SHAPE, np.float32) for _ in range(nin)]

    def forward():
        outs = mx_ops.invoke(name, xs, **attrs)
        outs = outs if isinstance(outs, (list, tuple)) else [outs]
        return {"filled": _filled(outs)}
    result["forward"] = _outcome(forward)

    def gpu_forward():
        # The GPU compute's trampoline entry (mx_ops.ext._library.run, as
        # _library_gpu calls it), on host memory: the library never reads it.
        outs = [np.zeros(s, t) for s, t in zip(result["shape"]["ok"], result["type"]["ok"])]
        packed = core.pack(attrs, in_shapes, (1, 0), True)
        flag = {n: i for i, n in enumerate(DTYPE_NAMES)}
        _library.run(packed, [(x.ctypes.data, x.shape, 0) for x in xs],
                     [(o.ctypes.data, o.shape, flag[o.dtype.name]) for o in outs], 2, 0, 0,
                     False)
        return {"filled": _filled(outs)}
    if "gpu" in op.compute:
        result["gpu_forward"] = _outcome(gpu_forward)
    if core.has_backward and "ok" in result["forward"]:
        def backward():
            ys = [np.ones(s, t) for s, t in zip(result["shape"]["ok"], result["type"]["ok"])]
            outs = mx_ops.invoke(f"_backward_{name}", ys + xs + ys, **attrs)
            outs = outs if isinstance(outs, (list, tuple)) else [outs]
            return {"filled": _filled(outs)}
        result["backward"] = _outcome(backward)


def probe(library, workdir, n, config):
    """What loading and calling copy ``n`` of the library configured with
    ``config`` does.  A copy, since a library is loaded once per path."""
    path = os.path.join(workdir, f"libabi_fuzz{n}.so")
    shutil.copyfile(library, path)
    handle = ctypes.CDLL(path)      # the handle mx's dlopen will share
    # '#' becomes the probe's number: a valid name is registered only once.
    name = config.get("name", "fz#_op").replace("#", f"{n:05d}")
    config = {**config, "name": name}
    _configure(handle, config, name)
    result = {"path": path, "name": name}
    result["load"] = _outcome(lambda: mx.library.load(path, verbose=False))
    if result["load"].get("ok"):
        _calls(name, result)
    return result


def main():
    library, workdir = sys.argv[1], sys.argv[2]
    # The results alone on stdout, one line each: anything else printed
    # (by Python or C code) goes to stderr.
    results = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    for n, line in enumerate(sys.stdin):
        try:
            result = probe(library, workdir, n, json.loads(line))
        except Exception:
            result = {"probe_failed": traceback.format_exc()}
        results.write("RESULT " + json.dumps(result) + "\n")
        results.flush()


if __name__ == "__main__":
    main()
