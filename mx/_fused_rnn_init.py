"""The FusedRNN initializer: initializes the one flat ``parameters`` array
of a fused RNN layer (the ``RNN`` operator) part by part, as MXNet 1.9.1's
FusedRNNCell lays it out: every layer's and direction's i2h then h2h
weights per gate, then all the biases in the same order."""
from mx import ndarray
from mx.initializer import InitDesc, Initializer, create

_GATES = {"rnn_relu": [""], "rnn_tanh": [""], "lstm": ["_i", "_f", "_c", "_o"],
          "gru": ["_r", "_z", "_o"]}


def fused_rnn_slices(size, num_hidden, num_layers, mode, bidirectional):
    """``[(name, start, shape)]`` of the parts of a flat parameter vector of
    ``size`` elements, in MXNet's FusedRNNCell order and names."""
    if mode not in _GATES:
        raise ValueError(f"FusedRNN: mode must be one of {sorted(_GATES)}, got {mode!r}")
    gates = _GATES[mode]
    directions = ["l", "r"] if bidirectional else ["l"]
    b, m, h = len(directions), len(gates), num_hidden
    num_input = size // b // h // m - (num_layers - 1) * (h + b * h + 2) - h - 2
    parts, p = [], 0
    for layer in range(num_layers):
        for d in directions:
            in_shape = (h, b * h) if layer > 0 else (h, num_input)
            for kind, shape in (("i2h", in_shape), ("h2h", (h, h))):
                for gate in gates:
                    parts.append((f"{d}{layer}_{kind}{gate}_weight", p, shape))
                    p += shape[0] * shape[1]
    for layer in range(num_layers):
        for d in directions:
            for kind in ("i2h", "h2h"):
                for gate in gates:
                    parts.append((f"{d}{layer}_{kind}{gate}_bias", p, (h,)))
                    p += h
    if num_input <= 0 or p != size:
        raise ValueError(f"FusedRNN: a parameter vector of {size} elements does not fit "
                         f"mode={mode!r}, num_hidden={num_hidden}, num_layers={num_layers}, "
                         f"bidirectional={bidirectional}")
    return parts


class FusedRNN(Initializer):
    """Initializes the parameters of a fused RNN layer.

    Parameters
    ----------
    init : Initializer, str or None
        Applied to each unpacked weight and bias; None falls back to the
        global initializer (``desc.global_init``).
    num_hidden, num_layers, mode, bidirectional, forget_bias
        As given to the layer.  For ``mode='lstm'`` both forget-gate biases
        (i2h and h2h) are set to ``forget_bias``, as MXNet 1.9.1 does.
    """
    def __init__(self, init, num_hidden, num_layers, mode, bidirectional=False,
                 forget_bias=1.0):
        if isinstance(init, str):
            init = create(init)
        super().__init__(init=init.dumps() if init is not None else None,
                         num_hidden=num_hidden, num_layers=num_layers, mode=mode,
                         bidirectional=bidirectional, forget_bias=forget_bias)
        self._init = init
        self._num_hidden = num_hidden
        self._num_layers = num_layers
        self._mode = mode
        self._bidirectional = bidirectional
        self._forget_bias = forget_bias

    def _init_weight(self, desc, arr):
        parts = fused_rnn_slices(arr.size, self._num_hidden, self._num_layers, self._mode,
                                 self._bidirectional)
        global_init = getattr(desc, "global_init", None)
        flat = arr.reshape((arr.size,))
        for name, start, shape in parts:
            size = shape[0] * (shape[1] if len(shape) > 1 else 1)
            part = ndarray.zeros(shape, ctx=arr.context, dtype=arr.dtype)
            if self._mode == "lstm" and name.endswith("_f_bias"):
                part[:] = self._forget_bias
            else:
                init = self._init if self._init is not None else global_init
                if init is None:
                    raise ValueError(f"FusedRNN: no initializer for {name!r}: pass 'init' or "
                                     "call it with an InitDesc carrying global_init")
                init(InitDesc(name, global_init=global_init), part)
            flat[start:start + size] = part.reshape((size,))
