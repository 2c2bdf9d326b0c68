"""The rnn family: RNN (MXNet's fused recurrent layers)."""
from mx_ops.ops.rnn import rnn  # noqa: F401  (registers)
