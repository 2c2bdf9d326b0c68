"""The -symbol.json mutation fuzzer, run by test_json_fuzz.py in a
subprocess (a crash or hang then fails that test instead of killing pytest).

    python fuzz_symbol_json.py SEED COUNT

Mutates every committed MXNet-written symbol file under data/ three ways,
COUNT mutants each: bytes (flips, truncations, insertions, deletions),
numbers (a run of digits, in JSON or inside an attribute string, becomes an
edge value) and structure (a field of a random object or list dropped,
duplicated, or replaced with junk).  Each mutant is loaded from a file
(``sym.load``) or from its text (``load_json``); a symbol that loads then
goes through partial shape inference.  Prints one JSON line: how many
loaded, how many were refused, and every outcome that was neither: any
exception other than SymbolJSONError naming the file (or, from inference,
an MXNetError), or a load that took over a second.
"""
import importlib.util
import json
import pathlib
import random
import sys
import tempfile
import time

from mx_engine.base import MXNetError
from mx_graph import sym
from mx_graph.json_format import SymbolJSONError
from mx_ops.fuzzing import EDGE_INTS, mutants, number_mutants

DATA = pathlib.Path(__file__).parent / "data"
FILES = sorted(DATA.glob("*-symbol.json")) + [DATA / "legacy_v080.json"]
JUNK = [None, True, -1, 2 ** 70, 1e308, "", "junk", "(2**70, 3)", [], {}, [[[]]],
        {"op": "null"}] + list(EDGE_INTS)


def _containers(doc, path=()):
    """(path, container) for every object and list in ``doc``."""
    if isinstance(doc, (dict, list)):
        yield path, doc
        items = doc.items() if isinstance(doc, dict) else enumerate(doc)
        for key, value in items:
            yield from _containers(value, path + (key,))


def structure_mutants(text, seed, count):
    """``count`` (description, mutant text) pairs of JSON ``text`` with one
    field of one object or list dropped, duplicated or replaced."""
    rng = random.Random(seed)
    for _ in range(count):
        doc = json.loads(text)
        places = [(p, c) for p, c in _containers(doc) if c]
        path, box = rng.choice(places)
        key = rng.choice(list(box) if isinstance(box, dict) else range(len(box)))
        action = rng.choice(("drop", "duplicate", "replace"))
        if action == "drop":
            del box[key]
        elif action == "duplicate" and isinstance(box, list):
            box.insert(key, box[key])
        else:
            box[key] = rng.choice(JUNK)
        yield f"{action} {list(path) + [key]}", json.dumps(doc)


def judge(source, run):
    """(outcome, why): outcome 'loaded' or 'refused' with why None, or
    'bad' with why."""
    start = time.perf_counter()
    try:
        symbol = run()
    except SymbolJSONError as exc:
        if not str(exc).startswith(source):
            return "bad", f"the error does not name {source}: {exc}"
        return "refused", None
    except Exception as exc:                    # anything else is a finding
        return "bad", f"{type(exc).__name__} from load: {exc}"
    if time.perf_counter() - start > 1.0:
        return "bad", f"loading took {time.perf_counter() - start:.1f} s"
    try:
        symbol.infer_shape_partial()
    except MXNetError:
        pass
    except Exception as exc:
        return "bad", f"{type(exc).__name__} from infer_shape_partial: {exc}"
    return "loaded", None


def _register_custom_op():
    """The custom operator custom-symbol.json uses, so that file loads."""
    spec = importlib.util.spec_from_file_location("reference_nets", DATA / "reference_nets.py")
    ref = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ref)
    ref.register_scale_by(ref.local_mx())


def run(seed, count):
    _register_custom_op()
    summary = {"loaded": 0, "refused": 0, "bad": []}
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "mutant-symbol.json"
        for k, src in enumerate(FILES):
            raw = src.read_bytes()
            text = raw.decode("utf-8")
            cases = [(what, m) for what, m in mutants(raw, seed + k, count)]
            cases += [(what, m.encode()) for what, m in number_mutants(text, seed + k, count)]
            cases += [(what, m.encode()) for what, m in structure_mutants(text, seed + k, count)]
            for i, (what, mutant) in enumerate(cases):
                if i % 2:
                    path.write_bytes(mutant)
                    outcome, why = judge(f"load('{path}')", lambda: sym.load(str(path)))
                else:
                    outcome, why = judge("load_json", lambda: sym.load_json(mutant))
                if why is not None:
                    summary["bad"].append(f"{src.name}: {what}: {why}"[:600])
                else:
                    summary[outcome] += 1
    return summary


if __name__ == "__main__":
    print(json.dumps(run(int(sys.argv[1]), int(sys.argv[2]))))
