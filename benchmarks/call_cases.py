"""The small-call cases of issue 13 (item 2): every kind of ``mx.nd`` call on
a tiny array, written once for ``mx`` (the same text runs under ``import mx``
and under MXNet 1.9.1's ``import mxnet as mx``), for NumPy and for PyTorch.

Pure Python without imports of any framework: it is imported by
bench_ndarray_calls.py (asv), compare_call_overhead.py and, inside MXNet's
and PyTorch's interpreters, by that script's workers.

A case is timed as ``n`` back-to-back calls followed by one wait (for ``mx``,
``mx.nd.waitall()``; NumPy and PyTorch's CPU calls are synchronous): the
cost the Python thread pays per call, the figure issue 13 quotes.

Append-only for the asv keys: a changed statement under an old key would
silently change what old results mean.  Add a new key instead.
"""
import ast
import textwrap
import time

# Arrays every case may use, per framework: a, b, c of shape (1,), float32.
PRELUDE = {
    "mx": "a = mx.nd.ones((1,)); b = mx.nd.ones((1,)); c = mx.nd.zeros((1,))",
    "np": ("a = np.ones((1,), np.float32); b = np.ones((1,), np.float32); "
           "c = np.zeros((1,), np.float32)"),
    "torch": "a = torch.ones((1,)); b = torch.ones((1,)); c = torch.zeros((1,))",
}

WAIT = {"mx": "mx.nd.waitall()", "np": "pass", "torch": "pass"}

# FullyConnected on a 4x8 batch with 3 hidden units.
_FC_MX = "x = mx.nd.ones((4, 8)); w = mx.nd.ones((3, 8)); bias = mx.nd.ones((3,))"
_FC_NP = ("x = np.ones((4, 8), np.float32); w = np.ones((3, 8), np.float32); "
          "bias = np.ones((3,), np.float32)")
_FC_T = "x = torch.ones((4, 8)); w = torch.ones((3, 8)); bias = torch.ones((3,))"

# The layers on tiny inputs: a 1x1x4x4 image, a 3x3 kernel, (2, 3) scores
# with their labels, a 4x3 embedding table and a per-channel BatchNorm.
_IMG_MX = "x = mx.nd.ones((1, 1, 4, 4))"
_IMG_NP = "x = np.ones((1, 1, 4, 4), np.float32)"
_IMG_T = "import torch.nn.functional as F; x = torch.ones((1, 1, 4, 4))"
_CONV_MX = _IMG_MX + "; w = mx.nd.ones((1, 1, 3, 3)); bias = mx.nd.ones((1,))"
_CONV_NP = (_IMG_NP + "; from numpy.lib.stride_tricks import sliding_window_view as sw; "
            "w = np.ones((1, 1, 3, 3), np.float32); bias = np.ones((1,), np.float32)")
_CONV_T = _IMG_T + "; w = torch.ones((1, 1, 3, 3)); bias = torch.ones((1,))"
_SCORES_MX = "s = mx.nd.ones((2, 3)); lbl = mx.nd.array([0, 2])"
_SCORES_NP = "s = np.ones((2, 3), np.float32)"
_SCORES_T = "s = torch.ones((2, 3))"
_SOFTMAX_NP = "e = np.exp(s - s.max(-1, keepdims=True)); c = e / e.sum(-1, keepdims=True)"
_BN_MX = ("x = mx.nd.ones((1, 2, 2, 2)); g = mx.nd.ones((2,)); be = mx.nd.zeros((2,)); "
          "mm = mx.nd.zeros((2,)); mv = mx.nd.ones((2,))")
_BN_NP = ("x = np.ones((1, 2, 2, 2), np.float32); g = np.ones((2, 1, 1), np.float32); "
          "be = np.zeros((2, 1, 1), np.float32); mm = np.zeros((2, 1, 1), np.float32); "
          "mv = np.ones((2, 1, 1), np.float32)")
_BN_T = ("import torch.nn.functional as F; x = torch.ones((1, 2, 2, 2)); g = torch.ones((2,)); "
         "be = torch.zeros((2,)); mm = torch.zeros((2,)); mv = torch.ones((2,))")
_EMB_MX = "idx = mx.nd.array([0, 2]); tab = mx.nd.ones((4, 3))"
_EMB_NP = "idx = np.array([0, 2]); tab = np.ones((4, 3), np.float32)"
_EMB_T = "import torch.nn.functional as F; idx = torch.tensor([0, 2]); tab = torch.ones((4, 3))"

# key (asv parameter), label, then (setup, statement) per framework; None
# where a framework has no counterpart.  The first case is the yardstick.
CASES = [
    ("add", "c = a + b",
     {"mx": ("", "c = a + b"), "np": ("", "c = np.add(a, b)"),
      "torch": ("", "c = a + b")}),
    ("add_scalar", "c = a + 1",
     {"mx": ("", "c = a + 1"), "np": ("", "c = a + 1"), "torch": ("", "c = a + 1")}),
    ("iadd_scalar", "a += 1",
     {"mx": ("", "a += 1"), "np": ("", "a += 1"), "torch": ("", "a += 1")}),
    ("iadd", "a += b",
     {"mx": ("", "a += b"), "np": ("", "a += b"), "torch": ("", "a += b")}),
    ("neg", "c = -a",
     {"mx": ("", "c = -a"), "np": ("", "c = -a"), "torch": ("", "c = -a")}),
    ("mul_bcast", "c = p * q, (2,1) x (1,2)",
     {"mx": ("p = mx.nd.ones((2, 1)); q = mx.nd.ones((1, 2))", "c = p * q"),
      "np": ("p = np.ones((2, 1), np.float32); q = np.ones((1, 2), np.float32)", "c = p * q"),
      "torch": ("p = torch.ones((2, 1)); q = torch.ones((1, 2))", "c = p * q")}),
    ("relu", "mx.nd.relu(a)",
     {"mx": ("", "c = mx.nd.relu(a)"), "np": ("", "c = np.maximum(a, 0)"),
      "torch": ("", "c = torch.relu(a)")}),
    ("elemwise_add", "mx.nd.elemwise_add(a, b)",
     {"mx": ("", "c = mx.nd.elemwise_add(a, b)"), "np": ("", "c = np.add(a, b)"),
      "torch": ("", "c = torch.add(a, b)")}),
    ("elemwise_add_out", "mx.nd.elemwise_add(a, b, out=c)",
     {"mx": ("", "mx.nd.elemwise_add(a, b, out=c)"), "np": ("", "np.add(a, b, out=c)"),
      "torch": ("", "torch.add(a, b, out=c)")}),
    ("zeros", "mx.nd.zeros((1,))",
     {"mx": ("", "c = mx.nd.zeros((1,))"), "np": ("", "c = np.zeros((1,), np.float32)"),
      "torch": ("", "c = torch.zeros((1,))")}),
    ("ones", "mx.nd.ones((2, 2))",
     {"mx": ("", "c = mx.nd.ones((2, 2))"), "np": ("", "c = np.ones((2, 2), np.float32)"),
      "torch": ("", "c = torch.ones((2, 2))")}),
    ("array", "mx.nd.array([1.0])",
     {"mx": ("", "c = mx.nd.array([1.0])"), "np": ("", "c = np.array([1.0], np.float32)"),
      "torch": ("", "c = torch.tensor([1.0])")}),
    ("fully_connected", "mx.nd.FullyConnected 4x8 -> 3",
     {"mx": (_FC_MX, "c = mx.nd.FullyConnected(x, w, bias, num_hidden=3)"),
      "np": (_FC_NP, "c = x @ w.T + bias"),
      "torch": ("import torch.nn.functional as F; " + _FC_T, "c = F.linear(x, w, bias)")}),
    ("activation_tanh", "mx.nd.Activation(a, act_type='tanh')",
     {"mx": ("", "c = mx.nd.Activation(a, act_type='tanh')"), "np": ("", "c = np.tanh(a)"),
      "torch": ("", "c = torch.tanh(a)")}),
    ("sum", "mx.nd.sum(a)",
     {"mx": ("", "c = mx.nd.sum(a)"), "np": ("", "c = np.sum(a)"),
      "torch": ("", "c = torch.sum(a)")}),
    ("reshape", "a.reshape((1, 1))",
     {"mx": ("", "c = a.reshape((1, 1))"), "np": ("", "c = a.reshape((1, 1))"),
      "torch": ("", "c = a.reshape((1, 1))")}),
    ("slice", "a[0:1]",
     {"mx": ("", "c = a[0:1]"), "np": ("", "c = a[0:1]"), "torch": ("", "c = a[0:1]")}),
    ("concat", "mx.nd.concat(a, b, dim=0)",
     {"mx": ("", "c = mx.nd.concat(a, b, dim=0)"), "np": ("", "c = np.concatenate((a, b))"),
      "torch": ("", "c = torch.cat((a, b))")}),
    ("take", "mx.nd.take(a, i), i = [0]",
     {"mx": ("i = mx.nd.array([0])", "c = mx.nd.take(a, i)"),
      "np": ("i = np.array([0])", "c = np.take(a, i)"),
      "torch": ("i = torch.tensor([0])", "c = torch.index_select(a, 0, i)")}),
    ("dot", "mx.nd.dot 2x2",
     {"mx": ("m = mx.nd.ones((2, 2))", "c = mx.nd.dot(m, m)"),
      "np": ("m = np.ones((2, 2), np.float32)", "c = np.dot(m, m)"),
      "torch": ("m = torch.ones((2, 2))", "c = torch.mm(m, m)")}),
    # A scalar that changes every call (a learning-rate schedule): the call
    # path must not parse (or cache) a plan per value.
    ("mul_scalar_varying", "c = a * lr, lr changing",
     {"mx": ("lr = 0.01", "lr += 1e-6; c = a * lr"),
      "np": ("lr = 0.01", "lr += 1e-6; c = a * lr"),
      "torch": ("lr = 0.01", "lr += 1e-6; c = a * lr")}),
    ("full", "mx.nd.full((1,), 2.0)",
     {"mx": ("", "c = mx.nd.full((1,), 2.0)"), "np": ("", "c = np.full((1,), 2.0, np.float32)"),
      "torch": ("", "c = torch.full((1,), 2.0)")}),
    ("convolution", "mx.nd.Convolution 1x1x4x4, 3x3 kernel",
     {"mx": (_CONV_MX, "c = mx.nd.Convolution(x, w, bias, kernel=(3, 3), num_filter=1)"),
      "np": (_CONV_NP, "c = np.einsum('nchwij,fcij->nfhw', sw(x, (3, 3), (2, 3)), w) + bias"),
      "torch": (_CONV_T, "c = F.conv2d(x, w, bias)")}),
    ("pooling_max", "mx.nd.Pooling max 2x2 on 1x1x4x4",
     {"mx": (_IMG_MX, "c = mx.nd.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type='max')"),
      "np": (_IMG_NP, "c = x.reshape(1, 1, 2, 2, 2, 2).max(axis=(3, 5))"),
      "torch": (_IMG_T, "c = F.max_pool2d(x, 2)")}),
    ("softmax", "mx.nd.softmax 2x3",
     {"mx": (_SCORES_MX, "c = mx.nd.softmax(s)"), "np": (_SCORES_NP, _SOFTMAX_NP),
      "torch": (_SCORES_T, "c = torch.softmax(s, -1)")}),
    # Outside autograd.record(): inference, the moving statistics.
    ("batchnorm_inference", "mx.nd.BatchNorm 1x2x2x2, inference",
     {"mx": (_BN_MX, "c = mx.nd.BatchNorm(x, g, be, mm, mv)"),
      "np": (_BN_NP, "c = (x - mm) / np.sqrt(mv + 1e-3) * g + be"),
      "torch": (_BN_T, "c = F.batch_norm(x, mm, mv, g, be, False, 0.9, 1e-3)")}),
    ("dropout_inference", "mx.nd.Dropout(a, p=0.5), inference",
     {"mx": ("", "c = mx.nd.Dropout(a, p=0.5)"), "np": None,
      "torch": ("import torch.nn.functional as F", "c = F.dropout(a, 0.5, False)")}),
    ("embedding", "mx.nd.Embedding, 2 of 4x3",
     {"mx": (_EMB_MX, "c = mx.nd.Embedding(idx, tab, input_dim=4, output_dim=3)"),
      "np": (_EMB_NP, "c = tab[idx]"), "torch": (_EMB_T, "c = F.embedding(idx, tab)")}),
    # Its forward is a softmax (the label matters to its backward only).
    ("softmax_output", "mx.nd.SoftmaxOutput 2x3",
     {"mx": (_SCORES_MX, "c = mx.nd.SoftmaxOutput(s, lbl)"), "np": (_SCORES_NP, _SOFTMAX_NP),
      "torch": (_SCORES_T, "c = torch.softmax(s, -1)")}),
]

KEYS = [key for key, _, _ in CASES]
LABELS = {key: label for key, label, _ in CASES}
YARDSTICK = KEYS[0]

# The loop is compiled from source so that the timed code is the
# statement itself, as ``timeit`` does: no call through a lambda, and names
# bound in the setup are closure cells (``nonlocal``, so ``a += 1`` works).
_TEMPLATE = """
def _make(_n):
{setup}
{wait}
    def _loop():
        {cells}
        for _i in range(_n):
{stmt}
{loop_wait}
    return _loop
"""


def _bound_names(source):
    """Names a setup source assigns (imports included), in order."""
    names = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.append(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names += [(a.asname or a.name).split(".")[0] for a in node.names]
    return list(dict.fromkeys(names))


def source(framework, key):
    """(setup, statement) of case ``key`` for ``framework`` ('mx', 'np' or
    'torch'), the prelude included; None where the case has none."""
    spec = dict((k, s) for k, _, s in CASES)[key].get(framework)
    if spec is None:
        return None
    setup, stmt = spec
    return "; ".join(filter(None, [PRELUDE[framework], setup])), stmt


def make_loop(framework, key, n, namespace):
    """A function running case ``key`` ``n`` times then one wait, built
    with the setup done (and waited for); None where the case has none.
    ``namespace`` holds the framework's module(s): {'mx': mx} etc."""
    src = source(framework, key)
    if src is None:
        return None
    setup, stmt = src
    ind = lambda text, depth: textwrap.indent(text.replace("; ", "\n"), "    " * depth)
    names = _bound_names(setup)
    code = _TEMPLATE.format(setup=ind(setup, 1), wait=ind(WAIT[framework], 1),
                            cells=f"nonlocal {', '.join(names)}" if names else "pass",
                            stmt=ind(stmt, 3), loop_wait=ind(WAIT[framework], 2))
    scope = dict(namespace)
    exec(compile(code, f"<case {framework}:{key}>", "exec"), scope)
    return scope["_make"](n)


def time_loop(loop, n, count):
    """Per-call seconds of each of ``count`` back-to-back runs of ``loop``
    (``n`` calls and one wait each)."""
    out = []
    for _ in range(count):
        t = time.perf_counter()
        loop()
        out.append((time.perf_counter() - t) / n)
    return out
