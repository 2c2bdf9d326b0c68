"""The cost of one small imperative ``mx.nd`` call (issue 13, item 2): every
case of benchmarks/call_cases.py (operators, in-place operators, ``out=``,
creation functions, layers, views) on tiny arrays, n calls then one wait.
Divide by n for the per-call cost; the target is every case within 2x of
``add`` (``c = a + b``).  Side by side with NumPy, MXNet 1.9.1 and PyTorch:
``benchmarks/compare_call_overhead.py``."""
import mx

from benchmarks import call_cases


class SmallCalls:
    """One case of call_cases.CASES, ``n`` calls then ``mx.nd.waitall()``."""
    params = [call_cases.KEYS]
    param_names = ["case"]
    n = 1000

    def setup(self, case):
        self.loop = call_cases.make_loop("mx", case, self.n, {"mx": mx})
        self.loop()                     # first calls (caches, workers) untimed

    def time_calls(self, case):
        self.loop()
