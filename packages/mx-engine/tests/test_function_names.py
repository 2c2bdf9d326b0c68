"""Function names: a name given at push lives as long as its function (and
the error, profiler event or pending report that quotes it), so unique
names do not pile up for the life of the process."""
import subprocess
import sys
import textwrap
import threading

import pytest

from mx_engine import cpu, engine


class Boom(Exception):
    pass


def _raise(rc):
    raise Boom("boom")


_LEAK_PROBE = textwrap.dedent("""
    import gc
    from mx_engine import cpu, engine

    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096

    v = engine.new_variable()
    def round_(start):
        for i in range(start, start + 100_000):
            engine.push_sync(lambda rc: None, cpu(), mutate_vars=[v],
                             name=f"step {i} of a long unique function name")
        engine.wait_for_all()

    round_(0)                      # warm up: pools, caches, allocator arenas
    gc.collect()
    before = rss()
    for k in range(1, 3):
        round_(k * 100_000)
    gc.collect()
    print(rss() - before)
""")


@pytest.mark.timeout(300)
def test_unique_names_do_not_accumulate():
    """200,000 pushes with distinct names: interned, they held 43 MiB."""
    proc = subprocess.run([sys.executable, "-c", _LEAK_PROBE], capture_output=True, text=True,
                          timeout=240)
    assert proc.returncode == 0, proc.stderr
    growth = int(proc.stdout.split()[-1])
    assert growth < 8 << 20, f"RSS grew by {growth / 2**20:.1f} MiB over 200,000 names"


def test_an_error_names_its_function_after_the_function_is_gone(any_engine):
    v = engine.new_variable()
    name = "".join(["unique ", "name ", str(id(v))])     # built at run time: not interned
    engine.push_sync(_raise, cpu(), mutate_vars=[v], name=name)
    engine.push_sync(lambda rc: None, cpu(), mutate_vars=[engine.new_variable()],
                     name=name + " too")
    engine.wait_for_all.__doc__  # noqa: B018
    with pytest.raises(Boom) as info:
        engine.wait_for_var(v)
    assert f"'{name}'" in info.value.__notes__[0]


def test_a_native_style_error_record_keeps_its_own_copy(any_engine):
    v = engine.new_variable()
    name = "".join(["async ", "reporter ", str(id(v))])
    engine.push_async(lambda rc, done: done("failed on purpose"), cpu(), mutate_vars=[v],
                      name=name)
    with pytest.raises(Exception, match="failed on purpose") as info:
        engine.wait_for_var(v)
    assert name in "".join(getattr(info.value, "__notes__", [])) + str(info.value)


def test_pending_reports_names_given_at_push(threaded_engine):
    gate = threading.Event()
    v = engine.new_variable()
    holder = "".join(["holder ", str(id(gate))])
    waiter = "".join(["waiter ", str(id(gate))])
    engine.push_sync(lambda rc: gate.wait(30), cpu(), mutate_vars=[v], name=holder)
    engine.push_sync(lambda rc: None, cpu(), mutate_vars=[v], name=waiter)
    try:
        report = engine.pending()
        names = [f["name"] for f in report]
        assert holder in names and waiter in names
        held_by = [w["held_by"] for f in report for w in f["waits_on"]]
        assert any(holder in h for h in held_by)
    finally:
        gate.set()
        engine.wait_for_all()


def test_operators_keep_their_names(any_engine):
    v = engine.new_variable()
    name = "".join(["operator ", str(id(v))])
    op = engine.new_operator(_raise, mutate_vars=[v], name=name)
    engine.push(op, cpu())
    engine.delete_operator(op)          # pushes already made still run and report
    with pytest.raises(Boom) as info:
        engine.wait_for_var(v)
    assert f"'{name}'" in info.value.__notes__[0]
    assert name in repr(op)
