"""The sequence family: SequenceMask, SequenceLast and SequenceReverse
(sequence.py), one block copy or fill per (step, batch) (sequence_cpu.h)."""
from mx_ops.ops.sequence import sequence  # noqa: F401  (registers)
