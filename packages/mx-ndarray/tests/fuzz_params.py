"""The .params mutation fuzzer, run by test_params_fuzz.py in a subprocess
(a crash or hang then fails that test instead of killing pytest).

    python fuzz_params.py SEED COUNT

Mutates every committed MXNet-written file under data/ (random byte-level
mutants, then every integer field of the header and first record set to
each edge value), loads each mutant from a buffer and, for one in ten, from
a file, and prints one JSON line: how many loaded, how many were refused,
and every outcome that was neither (any other exception, or an error that
does not name the file or an offset inside it).
"""
import json
import pathlib
import sys
import tempfile

from mx_ndarray import NDArray, load, load_frombuffer
from mx_ndarray.serialization import NDArrayFormatError
from mx_ops.fuzzing import int_fields, mutants

DATA = pathlib.Path(__file__).parent / "data"
# The list header (24 bytes) and a first record's fixed fields and dims.
HEADER_BYTES = 24 + 4 * 4 + 8 * 4 + 4 * 3


def check(source, data, loaded):
    """None when ``loaded`` (a result or the exception) is acceptable, else
    why not."""
    if isinstance(loaded, NDArrayFormatError):
        if loaded.source != source or not str(loaded).startswith(f"{source}: offset "):
            return f"the error does not name {source}: {loaded}"
        if not 0 <= loaded.offset <= len(data):
            return f"offset {loaded.offset} is outside the {len(data)} bytes: {loaded}"
        return None
    if isinstance(loaded, BaseException):
        return f"{type(loaded).__name__}: {loaded}"
    values = loaded.values() if isinstance(loaded, dict) else loaded
    if not isinstance(loaded, (list, dict)) or not all(
            v is None or isinstance(v, NDArray) for v in values):
        return f"loaded {type(loaded).__name__}, not a list or dict of NDArray"
    for v in values:
        if v is None:
            continue
        if v.stype == "default":
            v.asnumpy()           # the data is really there
        else:
            # A sparse record's stored components are what the file holds
            # (its logical shape may be far larger than the file).
            v.check_format()
            v.data.asnumpy()
            v.indices.asnumpy()
    return None


def attempt(load_fn, *args):
    try:
        return load_fn(*args)
    except Exception as exc:      # anything at all is recorded, then judged
        return exc


def run(seed, count):
    summary = {"loaded": 0, "refused": 0, "bad": []}
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "mutant.params"
        for k, src in enumerate(sorted(DATA.glob("*.params"))):
            data = src.read_bytes()
            cases = list(mutants(data, seed + k, count)) + list(int_fields(data, 0, HEADER_BYTES))
            for i, (what, mutant) in enumerate(cases):
                runs = [("<buffer>", attempt(load_frombuffer, mutant))]
                if i % 10 == 0:
                    path.write_bytes(mutant)
                    runs.append((str(path), attempt(load, str(path))))
                for source, loaded in runs:
                    why = check(source, mutant, loaded)
                    if why is not None:
                        summary["bad"].append(f"{src.name}: {what}: {why}")
                    elif isinstance(loaded, BaseException):
                        summary["refused"] += 1
                    else:
                        summary["loaded"] += 1
    return summary


if __name__ == "__main__":
    print(json.dumps(run(int(sys.argv[1]), int(sys.argv[2]))))
