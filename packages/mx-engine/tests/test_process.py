"""Behaviour across processes: fork, interpreter exit."""
import os
import subprocess
import sys
import textwrap

import pytest


def run(code, timeout=120, **env):
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **env})
    return proc


def test_engine_works_in_a_forked_child_and_in_the_parent():
    proc = run("""
        import os
        from mx_engine import cpu, engine, _testing
        v = engine.new_variable()
        out = []
        for i in range(100):
            engine.push_sync(lambda rc, i=i: out.append(i), cpu(), mutate_vars=[v])
        pid = os.fork()            # pending work is finished first, as in MXNet
        if pid == 0:
            ok = out == list(range(100))
            for i in range(100, 200):
                engine.push_sync(lambda rc, i=i: out.append(i), cpu(), mutate_vars=[v])
            _testing.push_noop_chain(v, cpu(), 1000)
            engine.wait_for_var(v)
            os._exit(0 if ok and out == list(range(200)) else 3)
        _, status = os.waitpid(pid, 0)
        engine.push_sync(lambda rc: out.append(-1), cpu(), mutate_vars=[v])
        engine.wait_for_all()
        assert out == list(range(100)) + [-1], out
        print("child", os.waitstatus_to_exitcode(status))
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "child 0"


def test_exit_with_work_still_queued_finishes_it_and_exits_cleanly(tmp_path):
    marker = tmp_path / "last.txt"
    proc = run(f"""
        import time
        from mx_engine import cpu, engine, _testing
        vs = [engine.new_variable() for _ in range(8)]
        for i in range(400):
            engine.push_sync(lambda rc: time.sleep(0.0005), cpu(), mutate_vars=[vs[i % 8]])
            _testing.push_sleep(cpu(), 0.0002, writes=[vs[i % 8]])
        engine.push_sync(lambda rc: open({str(marker)!r}, "w").write("done"), cpu(),
                         const_vars=vs)
        print("exiting with", engine.num_pending(), "pending")
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert marker.read_text() == "done"


def test_exit_with_failed_work_and_variables_alive_does_not_crash():
    proc = run("""
        from mx_engine import cpu, engine
        keep = [engine.new_variable() for _ in range(50)]
        for v in keep:
            engine.push_sync(lambda rc: 1 / 0, cpu(), mutate_vars=[v])
    """)
    assert proc.returncode == 0, proc.stderr


def test_fork_keeps_the_engine_type_chosen_in_code():
    proc = run("""
        import os
        from mx_engine import cpu, engine
        engine.set_engine_type("ThreadedEnginePooled")
        engine.push_sync(lambda rc: None, cpu(), mutate_vars=[engine.new_variable()])
        pid = os.fork()
        engine.push_sync(lambda rc: None, cpu(), mutate_vars=[engine.new_variable()])
        engine.wait_for_all()
        if pid == 0:
            os._exit(0 if engine.engine_type() == "ThreadedEnginePooled" else 3)
        _, status = os.waitpid(pid, 0)
        print(engine.engine_type(), os.waitstatus_to_exitcode(status))
    """)
    assert proc.stdout.strip() == "ThreadedEnginePooled 0", proc.stderr


@pytest.mark.parametrize("engine_type", ["NaiveEngine", "ThreadedEnginePooled"])
def test_engine_type_from_the_environment(engine_type):
    proc = run("""
        from mx_engine import cpu, engine
        engine.push_sync(lambda rc: None, cpu(), mutate_vars=[engine.new_variable()])
        engine.wait_for_all()
        print(engine.engine_type())
    """, MXNET_ENGINE_TYPE=engine_type)
    assert proc.stdout.strip() == engine_type, proc.stderr


@pytest.mark.parametrize("wait", ["engine.wait_for_all()", "engine.wait_for_var(v)"])
def test_ctrl_c_interrupts_a_wait_and_the_engine_goes_on(wait):
    proc = run(f"""
        import os, signal, threading
        from mx_engine import cpu, engine
        # A parent started in the background (`cmd &` without job control)
        # passes SIGINT down ignored, and Python then installs no handler.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        gate = threading.Event()
        v = engine.new_variable()
        engine.push_sync(lambda rc: gate.wait(60), cpu(), mutate_vars=[v])
        try:
            # Started inside the try: on a loaded machine the signal may come
            # before the wait begins, and must not escape (the process would
            # then exit waiting on the gated function).
            threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
            {wait}
        except KeyboardInterrupt:
            print("interrupted")
        gate.set()
        out = []
        engine.push_sync(lambda rc: out.append(1), cpu(), mutate_vars=[v])
        engine.wait_for_var(v)
        engine.wait_for_all()
        print(out)
    """, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["interrupted", "[1]"]
