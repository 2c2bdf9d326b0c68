"""What the engine costs per function, and what it buys on real work.

Per-function time is the reported time divided by ``n``.  Side-by-side
ratios against targets come from ``benchmarks/compare_engine.py``.
"""
from concurrent.futures import ThreadPoolExecutor

import mx_engine
from mx_engine import _testing, engine

from .common import (chain_arrays, new_variables, push_chains, push_python_noops,
                     run_chains_serial, submit_python_noops, warm_up)


class NativeNoop:
    """Native no-op functions pushed from a C loop: the engine's own cost,
    with no Python on either side."""
    params = [["chain", "independent"], [1000, 100000]]
    param_names = ["pattern", "n"]

    def setup(self, pattern, n):
        self.ctx = mx_engine.cpu()
        warm_up(self.ctx)
        self.var = engine.new_variable()
        self.vars = new_variables(n)

    def time_push_and_run(self, pattern, n):
        if pattern == "chain":
            _testing.push_noop_chain(self.var, self.ctx, n)
        else:
            _testing.push_noop_independent(self.vars, self.ctx)
        engine.wait_for_all()


class PythonNoop:
    """Python no-op callables: the engine (a worker takes the GIL per call)
    against ``ThreadPoolExecutor(max_workers=2).submit``."""
    params = [["engine", "thread_pool"], [1000, 10000]]
    param_names = ["runner", "n"]

    def setup(self, runner, n):
        self.ctx = mx_engine.cpu()
        warm_up(self.ctx)
        self.pool = None
        if runner == "thread_pool":
            self.pool = ThreadPoolExecutor(max_workers=2)
            # Start the pool's threads outside the timing, as warm_up does the engine's.
            submit_python_noops(self.pool, 2)

    def teardown(self, runner, n):
        if self.pool is not None:
            self.pool.shutdown()

    def time_noops(self, runner, n):
        if runner == "engine":
            push_python_noops(n, self.ctx)
        else:
            submit_python_noops(self.pool, n)


class NumpyChains:
    """Two independent chains of GIL-releasing NumPy work (tanh over 4 MB
    per op): through the engine, or serially in the calling thread."""
    params = [["engine", "serial"], [20]]
    param_names = ["runner", "ops_per_chain"]

    def setup(self, runner, ops_per_chain):
        self.ctx = mx_engine.cpu()
        warm_up(self.ctx)
        self.arrays = chain_arrays(2)
        self.vars = new_variables(2)

    def time_two_chains(self, runner, ops_per_chain):
        if runner == "engine":
            push_chains(self.arrays, self.vars, ops_per_chain, self.ctx)
        else:
            run_chains_serial(self.arrays, ops_per_chain)
