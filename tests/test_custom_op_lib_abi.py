"""Custom-operator libraries that return what lib_abi.h does not allow
(issue 12, finding 5): counts, statuses, names, shapes, dtypes and error
texts beyond its limits.  Each is a LibraryError (or, for a library's own
MX_FAIL, the error of the step that failed) naming the library, never a
read past a buffer, a crash or a hang.

The library is tests/custom_op_lib/abi_fuzz_lib.c, whose every returned
value the test sets; each probe runs in a long-lived subprocess
(tests/custom_op_lib/abi_probe.py, restarted after a crash) with a timeout,
so a regression fails the test instead of killing or hanging pytest.  The
expected outcome of every probe comes from ``expect``, a model of the
header's limits written from lib_abi.h alone.
"""
import json
import os
import select
import shutil
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st

import mx
import mx_ops
from mx_ops.core.dtypes import DTYPE_NAMES
from mx_ops.ext import _library

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAULTY = os.path.join(ROOT, "tests", "custom_op_lib")
PROBE = os.path.join(FAULTY, "abi_probe.py")
PROBE_TIMEOUT = 30          # seconds for one load and its calls; a spin fails here
# Every test here takes seconds; a hang the probe's timeout misses fails here.
pytestmark = pytest.mark.timeout(120)

INT_MIN, INT_MAX = -2 ** 31, 2 ** 31 - 1
INT64_MIN, INT64_MAX = -2 ** 63, 2 ** 63 - 1
ERR_SIZE = 512              # mx_ops.ext._library's message buffer

# lib_abi.h's limits, as the header states them.
MAX_DIM, MAX_OPS, MAX_NAME = 8, 4096, 255
MAX_INPUTS = MAX_OUTPUTS = 4096
MAX_EXTENT, MAX_ELEMENTS, NUM_DTYPES = 2 ** 32 - 1, 2 ** 60 - 1, 7
DTYPES = ("float32", "float64", "float16", "uint8", "int32", "int8", "int64")

# abi_fuzz_lib.c's bits of `fns` and kinds of string.
PARSE, TYPE, SHAPE, FWD_CPU, FWD_GPU, BWD_CPU, BWD_GPU, STATE_CPU, STATE_GPU = (
    1 << i for i in range(9))
GIVEN, NULL, UNTERMINATED = 0, 1, 2
# abi_probe.py's defaults (a valid operator) and its compute threshold.
DEFAULTS = {
    "abi_version": 1, "op_count": 1, "info_status": 1, "name_kind": GIVEN,
    "info_error_kind": NULL, "fns": PARSE | TYPE | SHAPE | FWD_CPU | FWD_GPU | BWD_CPU,
    "parse_status": 1, "num_in": 1, "num_out": 1, "shape_status": 1, "out_ndim": 2,
    "out_dim": 3, "type_status": 1, "out_type": 0, "compute_status": 1, "err_kind": GIVEN,
    "state_status": 1, "state_null": 0, "message": "fuzz says no",
}
MAX_COMPUTE_BYTES = 1 << 16


def test_the_header_limits_are_the_loaders():
    assert (_library.MAX_DIM, _library.MAX_OPS, _library.MAX_NAME, _library.MAX_INPUTS,
            _library.MAX_OUTPUTS, _library.MAX_EXTENT, _library.MAX_ELEMENTS,
            _library.NUM_DTYPES) == (MAX_DIM, MAX_OPS, MAX_NAME, MAX_INPUTS, MAX_OUTPUTS,
                                     MAX_EXTENT, MAX_ELEMENTS, NUM_DTYPES)
    assert DTYPE_NAMES[:NUM_DTYPES] == DTYPES
    assert issubclass(mx.library.LibraryError, mx.MXNetError)
    assert mx.library.LibraryError is _library.LibraryError


# ---------------------------------------------------------------------------
# The probe subprocess
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def fuzz_lib(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.fail("building the fuzz library needs a C compiler: neither 'cc' nor 'gcc' is "
                    "on PATH")
    path = str(tmp_path_factory.mktemp("abi_fuzz") / "libabi_fuzz.so")
    cmd = [cc, "-shared", "-fPIC", "-O1", "-std=c11", "-Wall", "-Werror", "-I",
           mx_ops.get_include(), os.path.join(FAULTY, "abi_fuzz_lib.c"), "-o", path]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        pytest.fail(f"building the fuzz library failed:\n{' '.join(cmd)}\n{done.stderr}")
    return path


class Prober:
    """abi_probe.py in a subprocess: ``prober(config)`` is its result for
    one configured copy of the library.  A probe that kills the subprocess
    or outlasts PROBE_TIMEOUT fails (and the next starts a fresh one)."""

    def __init__(self, library, workdir):
        self.library, self.workdir = library, workdir
        self.proc = None
        self.stderr = os.path.join(workdir, "stderr.txt")

    def _start(self):
        with open(self.stderr, "w") as err:
            self.proc = subprocess.Popen([sys.executable, PROBE, self.library, self.workdir],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=err, text=True, bufsize=1)

    def _fail(self, config, why):
        self.close()
        with open(self.stderr) as err:
            tail = err.read()[-3000:]
        # An AssertionError, which Hypothesis shrinks (the next probe
        # starts a fresh subprocess).
        raise AssertionError(f"the probe {why} on config {config}:\n{tail}")

    def __call__(self, config):
        if self.proc is None:
            self._start()
        self.proc.stdin.write(json.dumps(config) + "\n")
        self.proc.stdin.flush()
        # One line answers each config (abi_probe sends nothing else to
        # stdout), so nothing waits in the reader's buffer unseen by select.
        ready, _, _ = select.select([self.proc.stdout], [], [], PROBE_TIMEOUT)
        if not ready:
            self._fail(config, f"ran past {PROBE_TIMEOUT} s")
        line = self.proc.stdout.readline()
        if not line:
            code = self.proc.wait()
            self._fail(config, f"died (exit status {code}; negative: the signal)")
        assert line.startswith("RESULT "), line
        result = json.loads(line[len("RESULT "):])
        assert "probe_failed" not in result, result["probe_failed"]
        return result

    def close(self):
        if self.proc is not None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None


@pytest.fixture(scope="module")
def prober(fuzz_lib, tmp_path_factory):
    p = Prober(fuzz_lib, str(tmp_path_factory.mktemp("abi_probe")))
    yield p
    p.close()


# ---------------------------------------------------------------------------
# The model: what each step should give for a config
# ---------------------------------------------------------------------------
def _status_error(status, kind, function, bad="LibraryError"):
    """The expected error of a status other than MX_SUCCESS: MX_FAIL is the
    step's own error class with the library's message, anything else a
    ``bad`` naming the status."""
    if status == 0:
        return ("error", kind, None)
    return ("error", bad, f"{function} returned status {status}")


def _load(c):
    named = (c["name_kind"] == GIVEN and c["name"].isidentifier()
             and len(c["name"].encode()) <= MAX_NAME)
    fns = c["fns"]
    forward, stateful = fns & (FWD_CPU | FWD_GPU), fns & (STATE_CPU | STATE_GPU)
    if (c["abi_version"] != 1 or not 0 <= c["op_count"] <= MAX_OPS
            or (c["op_count"] > 0 and (
                c["info_status"] != 1 or not named or c["info_error_kind"] != NULL
                or (fns & (PARSE | TYPE | SHAPE)) != PARSE | TYPE | SHAPE
                or bool(forward) == bool(stateful) or (stateful and fns & (BWD_CPU | BWD_GPU))
                or c["op_count"] > 1))):
        return ("error", "LibraryError", None)
    return ("ok", [] if c["op_count"] == 0 else [c["name"]])


def _parse(c):
    if c["parse_status"] != 1:
        return _status_error(c["parse_status"], "ParamError", "parseAttrs")
    if not 0 <= c["num_in"] <= MAX_INPUTS:
        return ("error", "LibraryError", f"gave num_in={c['num_in']}")
    if not 1 <= c["num_out"] <= MAX_OUTPUTS:
        return ("error", "LibraryError", f"gave num_out={c['num_out']}")
    return ("ok", [c["num_in"], c["num_out"]])


def _shape(c):
    ndim, dim = c["out_ndim"], c["out_dim"]
    if c["shape_status"] != 1:
        return _status_error(c["shape_status"], "ShapeError", "inferShape")
    if ndim == -1:
        return ("error", "ShapeError", "left the shape of output 0 unset")
    if not 1 <= ndim <= MAX_DIM:
        return ("error", "LibraryError", f"gave output 0 out_ndim={ndim}; the limit is 1 to 8")
    if not 0 <= dim <= MAX_EXTENT:
        return ("error", "LibraryError", f"gave output 0 the extent {dim} in dimension 0")
    if max(dim, 1) ** ndim > MAX_ELEMENTS:
        return ("error", "LibraryError", f"of {dim ** ndim} elements; the limit is "
                                         f"{MAX_ELEMENTS}")
    return ("ok", [[dim] * ndim] * c["num_out"])


def _type(c):
    t = c["out_type"]
    if c["type_status"] != 1:
        return _status_error(c["type_status"], "TypeInferenceError", "inferType")
    if t == -1:
        return ("error", "TypeInferenceError", "left the dtype of output 0 unset")
    if not 0 <= t < NUM_DTYPES:
        return ("error", "LibraryError", f"gave output 0 the dtype flag {t}")
    return ("ok", [DTYPES[t]] * c["num_out"])


def _compute(c, stateful):
    """A forward (or backward) call's outcome; its errors come through the
    engine as MXNetError."""
    if stateful:
        if c["state_status"] != 1:
            return _status_error(c["state_status"], "MXNetError", "mxlib_create_state",
                                 "MXNetError")
        if c["state_null"]:
            return ("error", "MXNetError", "mxlib_create_state returned MX_SUCCESS but no "
                                           "state")
    if c["compute_status"] != 1:
        fn = "mxlib_state_compute" if stateful else "mxlib_compute"
        return _status_error(c["compute_status"], "MXNetError", fn, "MXNetError")
    return ("ok", {"filled": True})


def expect(c):
    """{step: ("ok", value) or ("error", class name, text or None)} for the
    steps abi_probe reaches with config ``c`` (defaults filled in)."""
    out = {"load": _load(c)}
    if out["load"][0] != "ok" or not out["load"][1]:
        return out
    out["parse"] = _parse(c)
    if out["parse"][0] != "ok":
        return out
    out["shape"], out["type"] = _shape(c), _type(c)
    if out["shape"][0] != "ok" or out["type"][0] != "ok":
        return out
    nbytes = c["num_out"] * c["out_dim"] ** c["out_ndim"] * np.dtype(DTYPES[c["out_type"]]).itemsize
    if nbytes > MAX_COMPUTE_BYTES:
        return out
    fns = c["fns"]
    stateful = bool(fns & (STATE_CPU | STATE_GPU))
    if fns & (FWD_CPU | STATE_CPU):
        out["forward"] = _compute(c, stateful)
    else:
        out["forward"] = ("error", "OperatorNotFound", "no 'compute[cpu]' registered")
    if fns & (FWD_GPU | STATE_GPU):
        out["gpu_forward"] = _compute(c, stateful)
    if (stateful or fns & (BWD_CPU | BWD_GPU)) and out["forward"][0] == "ok":
        out["backward"] = (_compute(c, stateful) if fns & (BWD_CPU | STATE_CPU) else
                           ("error", "OperatorNotFound", "no 'compute[cpu]' registered"))
    return out


def _err_text(c):
    """What the library wrote into err, as the message must show it."""
    return {GIVEN: c["message"], NULL: None, UNTERMINATED: "Z" * (ERR_SIZE - 1)}[c["err_kind"]]


def check(config, result):
    """Asserts that the probe's result is the model's, and that every error
    names the library and shows no byte the library did not write."""
    c = {**DEFAULTS, **config, "name": result["name"]}
    want = expect(c)
    got_steps = [k for k in ("load", "parse", "shape", "type", "forward", "gpu_forward",
                             "backward") if k in result]
    assert got_steps == list(want), (config, result)
    for step, w in want.items():
        got = result[step]
        if w[0] == "ok":
            assert "ok" in got and got["ok"] == w[1], (step, config, got)
            continue
        assert "error" in got, (step, config, got)
        assert w[1] in got["classes"], (step, config, got)
        msg = got["message"]
        # The registry's "no compute" names the operator, the rest the library.
        assert (result["name"] if w[1] == "OperatorNotFound" else result["path"]) in msg, (
            step, config, msg)
        if w[2] is not None:
            assert w[2] in msg, (step, config, msg)
        if w[1] == "LibraryError":
            continue
        text = _err_text(c)
        if w[2] is None and text is not None:       # the library's MX_FAIL message
            assert text in msg and "Z" * ERR_SIZE not in msg, (step, config, msg)
        if c["err_kind"] == UNTERMINATED:
            assert "Z" * ERR_SIZE not in msg, (step, config, msg)


def run(prober, **config):
    result = prober(config)
    check(config, result)
    return result


def message(result, step):
    return result[step]["message"]


# ---------------------------------------------------------------------------
# Regressions: the findings, one probe each
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("ndim", [9, 100000, 2 ** 30, INT_MAX, 0, -2, INT_MIN])
def test_infer_shape_ndim_beyond_the_buffer(prober, ndim):
    # 100000 read past the 8 extents of the output's slot (heap values in
    # the message), 2**30 segfaulted.  The exact text: nothing of the heap.
    r = run(prober, out_ndim=ndim)
    assert message(r, "shape") == (
        f"mx.library: library '{r['path']}', operator '{r['name']}': inferShape gave output 0 "
        f"out_ndim={ndim}; the limit is 1 to 8 (MX_LIB_MAX_DIM), or -1 for unset")


@pytest.mark.parametrize("count", [INT_MAX, MAX_OPS + 1, -1, INT_MIN])
def test_op_count_beyond_the_limit(prober, count):
    # INT_MAX spun in load, calling mxlib_op_info two billion times.
    r = run(prober, op_count=count)
    assert message(r, "load") == (
        f"mx.library: library '{r['path']}': mxlib_op_count returned {count}; the limit is 0 "
        f"to 4096 (MX_LIB_MAX_OPS)")


def test_op_count_at_the_limit_is_read_in_full(prober):
    # 4096 calls of mxlib_op_info, all naming one operator: refused for the
    # duplicate, not for the count.
    r = run(prober, op_count=MAX_OPS)
    assert f"registers operator '{r['name']}' twice" in message(r, "load")


@pytest.mark.parametrize("status", [0, -1, 2, INT_MAX])
def test_op_info_failure_is_a_library_error_naming_the_path(prober, status):
    r = run(prober, info_status=status)
    assert message(r, "load") == (
        f"mx.library: library '{r['path']}': mxlib_op_info(0) returned status {status} for an "
        f"index below mxlib_op_count; the ABI wants 1 (MX_SUCCESS)")


def test_bad_operator_names(prober):
    r = run(prober, name_kind=NULL)
    assert message(r, "load").endswith("mxlib_op_info(0) gave a NULL operator name")
    # No NUL within MAX_NAME bytes: refused without showing what follows.
    r = run(prober, name_kind=UNTERMINATED)
    assert "no NUL in its first 255 bytes" in message(r, "load")
    assert "aaaa" not in message(r, "load")
    for name in ("", "two words", "9lives", "a" * (MAX_NAME + 1)):
        r = run(prober, name=name)
        assert f"library '{r['path']}'" in message(r, "load")
    assert "which is not an identifier" in run(prober, name="two words")["load"]["message"]
    r = run(prober, name="a" * (MAX_NAME - 5) + "#")     # the longest name loads
    assert len(r["name"]) == MAX_NAME
    assert r["load"] == {"ok": [r["name"]]} and r["forward"]["ok"]["filled"]


def test_registration_error_text_is_bounded(prober):
    r = run(prober, info_error_kind=GIVEN)
    assert message(r, "load").endswith(f"operator '{r['name']}' of library '{r['path']}': "
                                       f"fuzz says no")
    r = run(prober, info_error_kind=UNTERMINATED)
    assert message(r, "load").endswith("a" * 1023 + " [cut at MX_LIB_MAX_MESSAGE bytes]")


@pytest.mark.parametrize("field, value, limit", [
    ("num_in", -1, "0 to 4096 (MX_LIB_MAX_INPUTS)"),
    ("num_in", MAX_INPUTS + 1, "0 to 4096 (MX_LIB_MAX_INPUTS)"),
    ("num_in", INT_MAX, "0 to 4096 (MX_LIB_MAX_INPUTS)"),
    ("num_out", 0, "1 to 4096 (MX_LIB_MAX_OUTPUTS)"),
    ("num_out", -1, "1 to 4096 (MX_LIB_MAX_OUTPUTS)"),
    ("num_out", INT_MAX, "1 to 4096 (MX_LIB_MAX_OUTPUTS)"),
    ("num_out", INT_MIN, "1 to 4096 (MX_LIB_MAX_OUTPUTS)"),
])
def test_parse_attrs_counts_beyond_the_limits(prober, field, value, limit):
    # num_out sized the shape buffers: INT_MAX * 8 overflowed an int.
    r = run(prober, **{field: value})
    assert message(r, "parse") == (
        f"mx.library: library '{r['path']}', operator '{r['name']}': parseAttrs gave "
        f"{field}={value}; the limit is {limit}")


@pytest.mark.parametrize("dim, ndim, why", [
    (-1, 2, "the extent -1 in dimension 0; the limit is 0 to 4294967295 (MX_LIB_MAX_EXTENT)"),
    (INT64_MIN, 1, f"the extent {INT64_MIN} in dimension 0"),
    (MAX_EXTENT + 1, 1, f"the extent {MAX_EXTENT + 1} in dimension 0"),
    (INT64_MAX, 3, f"the extent {INT64_MAX} in dimension 0"),
    (2 ** 30, 2, f"the shape {(2 ** 30, 2 ** 30)}, of {2 ** 60} elements; the limit is "
                 f"{MAX_ELEMENTS} (MX_LIB_MAX_ELEMENTS)"),
    (MAX_EXTENT, 8, f"the shape {(MAX_EXTENT,) * 8}, of {MAX_EXTENT ** 8} elements"),
])
def test_infer_shape_extents_beyond_the_limits(prober, dim, ndim, why):
    r = run(prober, out_dim=dim, out_ndim=ndim)
    assert message(r, "shape").startswith(
        f"mx.library: library '{r['path']}', operator '{r['name']}': inferShape gave output 0 "
        f"{why}")


def test_the_largest_shapes_allowed_are_inferred(prober):
    assert run(prober, out_dim=MAX_EXTENT, out_ndim=1)["shape"] == {"ok": [[MAX_EXTENT]]}
    assert run(prober, out_dim=1000, out_ndim=6)["shape"] == {"ok": [[1000] * 6]}   # 10**18
    # Zero extents are allowed and do not count: (0, 2**32-1, ...) is empty.
    r = run(prober, out_dim=0, out_ndim=MAX_DIM)
    assert r["shape"] == {"ok": [[0] * MAX_DIM]} and r["forward"]["ok"]["filled"]
    # Eight dimensions are computed, not only inferred.
    assert run(prober, out_dim=3, out_ndim=MAX_DIM)["forward"]["ok"]["filled"]


@pytest.mark.parametrize("flag", [NUM_DTYPES, 100, -2, INT_MIN, INT_MAX])
def test_infer_type_flags_beyond_the_limit(prober, flag):
    r = run(prober, out_type=flag)
    assert message(r, "type") == (
        f"mx.library: library '{r['path']}', operator '{r['name']}': inferType gave output 0 "
        f"the dtype flag {flag}; the limit is 0 to 6 (MX_LIB_NUM_DTYPES), or -1 for unset")


@pytest.mark.parametrize("status", [-1, 2, INT_MAX, INT_MIN])
@pytest.mark.parametrize("field, step, function", [
    ("parse_status", "parse", "parseAttrs"), ("shape_status", "shape", "inferShape"),
    ("type_status", "type", "inferType"), ("compute_status", "forward", "mxlib_compute"),
    ("compute_status", "gpu_forward", "mxlib_compute"),
])
def test_statuses_other_than_fail_and_success(prober, status, field, step, function):
    # Any non-zero status used to count as success.
    r = run(prober, **{field: status})
    assert (f"{function} returned status {status}; the ABI allows 0 (MX_FAIL) or 1 "
            f"(MX_SUCCESS)") in message(r, step)


@pytest.mark.parametrize("field, step", [("parse_status", "parse"), ("shape_status", "shape"),
                                         ("type_status", "type"),
                                         ("compute_status", "forward"),
                                         ("compute_status", "gpu_forward")])
def test_error_text_without_a_terminator_is_cut_at_the_buffer(prober, field, step):
    # The library fills all 512 bytes of err with no NUL: the message is
    # its first 511, never what follows the buffer on the stack.
    r = run(prober, **{field: 0, "err_kind": UNTERMINATED})
    msg = message(r, step)
    assert msg.endswith("Z" * (ERR_SIZE - 1)) and "Z" * ERR_SIZE not in msg
    # Nothing written at all: no stale text either.
    r = run(prober, **{field: 0, "err_kind": NULL})
    assert "Z" not in message(r, step)


def test_stateful_operator_whose_create_state_misbehaves(prober):
    stateful = PARSE | TYPE | SHAPE | STATE_CPU | STATE_GPU
    r = run(prober, fns=stateful)
    assert r["forward"]["ok"]["filled"] and r["backward"]["ok"]["filled"]
    r = run(prober, fns=stateful, state_null=1)
    assert "mxlib_create_state returned MX_SUCCESS but no state" in message(r, "forward")
    r = run(prober, fns=stateful, state_status=7)
    assert "mxlib_create_state returned status 7" in message(r, "gpu_forward")
    r = run(prober, fns=stateful, compute_status=-3)
    assert "mxlib_state_compute returned status -3" in message(r, "forward")


# ---------------------------------------------------------------------------
# The fuzzer: any mix of hostile values
# ---------------------------------------------------------------------------
STATUS = (0, 1, -1, 2, INT_MAX, INT_MIN)
COUNT = (INT_MIN, -2, -1, 0, 1, 2, 3, 7, 8, 9, 4095, 4096, 4097, 2 ** 30, INT_MAX)
EXTENT = (INT64_MIN, -1, 0, 1, 2, 3, 2 ** 20, 2 ** 30, 2 ** 31, MAX_EXTENT, MAX_EXTENT + 1,
          2 ** 62, INT64_MAX)
REQUIRED = PARSE | TYPE | SHAPE
# The values each field takes besides its default: edges of its range,
# and valid values next to them.
HOSTILE = {
    "abi_version": st.sampled_from((0, 2, -1, INT_MAX, INT_MIN)),
    "op_count": st.sampled_from(COUNT),
    "info_status": st.sampled_from(STATUS),
    "name_kind": st.sampled_from((NULL, UNTERMINATED)),
    # '#': the probe's number (5 digits), keeping valid names unique.
    "name": st.sampled_from(("", "x y#", "1a#", "a" * (MAX_NAME - 5) + "#",
                             "a" * (MAX_NAME - 4) + "#", "\u00e9t\u00e9#")),
    "info_error_kind": st.sampled_from((GIVEN, UNTERMINATED)),
    "fns": st.sampled_from((0, REQUIRED, REQUIRED | FWD_GPU, REQUIRED | STATE_CPU,
                            REQUIRED | STATE_GPU, REQUIRED | STATE_CPU | STATE_GPU,
                            REQUIRED | STATE_CPU | BWD_CPU, REQUIRED | STATE_CPU | FWD_CPU,
                            REQUIRED | FWD_CPU | BWD_GPU, TYPE | SHAPE | FWD_CPU,
                            PARSE | SHAPE | FWD_CPU, PARSE | TYPE | FWD_CPU)),
    "parse_status": st.sampled_from(STATUS),
    "num_in": st.sampled_from(COUNT),
    "num_out": st.sampled_from(COUNT),
    "shape_status": st.sampled_from(STATUS),
    "out_ndim": st.sampled_from(COUNT + (100000,)),
    "out_dim": st.sampled_from(EXTENT),
    "type_status": st.sampled_from(STATUS),
    "out_type": st.sampled_from((*range(-2, NUM_DTYPES + 1), INT_MIN, INT_MAX)),
    "compute_status": st.sampled_from(STATUS),
    "err_kind": st.sampled_from((NULL, UNTERMINATED)),
    "state_status": st.sampled_from(STATUS),
    "state_null": st.just(1),
}
# One to four fields hostile at a time, the rest valid, so that most
# probes get past loading to the calls.
CONFIGS = st.sets(st.sampled_from(sorted(HOSTILE)), min_size=1, max_size=4).flatmap(
    lambda keys: st.fixed_dictionaries({k: HOSTILE[k] for k in keys}))


@settings(max_examples=300, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(config=CONFIGS)
def test_fuzz_the_library_abi(prober, config):
    """Every load and call either works as the model says or raises the
    model's error naming the library; the subprocess never dies or hangs."""
    result = prober(config)
    check(config, result)
    steps = [k for k in ("load", "parse", "shape", "type", "forward") if k in result]
    event(f"last step: {steps[-1]} ({'ok' if 'ok' in result[steps[-1]] else 'error'})")
