"""``mx.test_utils``: MXNet 1.9.1's ``mxnet.test_utils`` for ``mx``.

Same names, signatures and semantics.  It stands on ``mx_ops.test_utils``
(the operator-level finite-difference checks and the call-plan helpers,
re-exported here); what mx._testing adds works on NDArrays, Symbols and
executors: compare (tolerances, assert_almost_equal), arrays (test data),
executor (check_symbolic_*, check_numeric_gradient, check_consistency),
environment (env vars, iterators, data sets), stats (chi-square checks).
Sparse storage types and data-set downloads are not available yet: those
helpers raise errors that say so.
"""
# The operator-level base (NumPy in, NumPy out), part of this module's API.
from mx_ops.test_utils import (numeric_gradient, plan_cache_limit,  # noqa: F401
                               same_outcome, symbolic_gradient)

from mx._testing.compare import *  # noqa: F401,F403
from mx._testing.arrays import *  # noqa: F401,F403
from mx._testing.executor import *  # noqa: F401,F403
from mx._testing.environment import *  # noqa: F401,F403
from mx._testing.stats import *  # noqa: F401,F403
from mx._testing.optimizer import *  # noqa: F401,F403
# Private helpers MXNet users' tests reach for.
from mx._testing.compare import _find_max_violation  # noqa: F401
from mx._testing.executor import _parse_aux_states, _parse_location  # noqa: F401
