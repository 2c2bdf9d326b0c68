"""Mutants of valid files, for fuzzing the loaders of every file format
(``.params``, ``-symbol.json``): byte flips, truncations, insertions,
deletions and integer fields set to edge values, drawn from a seed so that
a failure can be replayed from its description.

A loader passes when each mutant either loads or raises the format's own
error naming the file; tests run the loop in a subprocess, so that a crash
or a hang fails the test instead of killing it.
"""
import json
import random
import re
import struct
import subprocess
import sys

__all__ = ["EDGE_INTS", "EDGE_NUMBER_TEXTS", "mutants", "int_fields", "set_int",
           "number_mutants", "limit_memory", "run_fuzzer"]

# Values that break size arithmetic: signed and unsigned extremes of 32 and
# 64 bits, and powers of two whose products overflow.
EDGE_INTS = (0, 1, 2, 255, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 40, 2 ** 62, 2 ** 63 - 1,
             2 ** 63, 2 ** 64 - 1, -1, -2 ** 31, -2 ** 63)

# The same as the text a JSON file would hold, plus what int() refuses.
EDGE_NUMBER_TEXTS = tuple(str(v) for v in EDGE_INTS) + (
    "1" * 20, "9" * 5000, "1e400", "-1e400", "NaN", "Infinity", "1.5", "0x10", "", "-")


def _flip(rng, data):
    at = rng.randrange(len(data))
    bit = 1 << rng.randrange(8)
    return f"flip bit {bit:#x} of byte {at}", data[:at] + bytes([data[at] ^ bit]) + data[at + 1:]


def _truncate(rng, data):
    at = rng.randrange(len(data))
    return f"truncate to {at} bytes", data[:at]


def _insert(rng, data):
    at = rng.randrange(len(data) + 1)
    junk = bytes(rng.randrange(256) for _ in range(rng.choice((1, 4, 8, 64))))
    return f"insert {junk.hex()} at {at}", data[:at] + junk + data[at:]


def _delete(rng, data):
    at = rng.randrange(len(data))
    n = rng.choice((1, 4, 8, 64))
    return f"delete {n} bytes at {at}", data[:at] + data[at + n:]


def _set_int(rng, data):
    width = rng.choice((4, 8))
    if len(data) < width:
        return _flip(rng, data)
    at = rng.randrange(0, len(data) - width + 1)
    return set_int(data, at, width, rng.choice(EDGE_INTS))


def set_int(data, at, width, value):
    """(description, ``data`` with the little-endian ``width``-byte integer
    at ``at`` set to ``value``, wrapped to the width)."""
    raw = struct.pack("<Q", value % 2 ** 64)[:width]
    return f"set the {width}-byte int at {at} to {value}", data[:at] + raw + data[at + width:]


_KINDS = (_flip, _truncate, _insert, _delete, _set_int)


def mutants(data, seed, count):
    """``count`` (description, mutant) pairs of bytes ``data``, each made
    by one to three random byte-level mutations drawn from ``seed``."""
    rng = random.Random(seed)
    for _ in range(count):
        steps, out = [], data
        for _ in range(rng.choice((1, 1, 2, 3))):
            if not out:
                break
            what, out = rng.choice(_KINDS)(rng, out)
            steps.append(what)
        yield "; ".join(steps), out


def int_fields(data, start=0, stop=None, widths=(4, 8)):
    """Every (description, mutant) that sets a 4- or 8-byte integer at a
    4-aligned offset of ``data[start:stop]`` to each of EDGE_INTS: the
    exhaustive sweep over a binary header."""
    stop = len(data) if stop is None else min(stop, len(data))
    for at in range(start, stop, 4):
        for width in widths:
            if at + width <= len(data):
                for value in EDGE_INTS:
                    yield set_int(data, at, width, value)


def number_mutants(text, seed, count):
    """``count`` (description, mutant) pairs of str ``text`` in which one
    run of digits (a JSON number, or one inside an attribute string such
    as "(5, 5)") becomes one of EDGE_NUMBER_TEXTS."""
    spans = [m.span() for m in re.finditer(r"-?\d+", text)]
    rng = random.Random(seed)
    for _ in range(count):
        a, b = rng.choice(spans)
        value = rng.choice(EDGE_NUMBER_TEXTS)
        yield f"replace {text[a:b]!r} at {a} with {value[:20]!r}", text[:a] + value + text[b:]


def limit_memory(nbytes=8 << 30):
    """Caps this process's address space (a child's preexec_fn): a
    regression that builds billions of objects then fails with MemoryError
    instead of waking the OOM killer."""
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (nbytes, nbytes))


def run_fuzzer(script, seed, count, timeout):
    """Runs ``python script SEED COUNT`` in a child under ``limit_memory``
    and returns the JSON summary its last line prints; a crash or a hang
    raises (a test then fails instead of dying)."""
    proc = subprocess.run([sys.executable, str(script), str(seed), str(count)],
                          capture_output=True, text=True, timeout=timeout,
                          preexec_fn=limit_memory)
    if proc.returncode != 0:
        raise RuntimeError(f"{script} died ({proc.returncode}): {proc.stderr[-3000:]}")
    return json.loads(proc.stdout.splitlines()[-1])
