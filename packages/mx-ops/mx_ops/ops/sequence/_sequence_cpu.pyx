"""The CPU kernels of the sequence family (sequence_cpu.h), as addresses."""
from mx_ops.core._types cimport MXFCompute, MXOpCall

cdef extern from "sequence_cpu.h" namespace "mxop" nogil:
    int sequence_mask(MXOpCall* c)
    int sequence_reverse(MXOpCall* c)
    int sequence_last(MXOpCall* c)
    int sequence_last_backward(MXOpCall* c)


def kernels():
    """{'SequenceMask', 'SequenceReverse', 'SequenceLast', '_backward_SequenceLast': address}."""
    return {"SequenceMask": <size_t><MXFCompute>sequence_mask,
            "SequenceReverse": <size_t><MXFCompute>sequence_reverse,
            "SequenceLast": <size_t><MXFCompute>sequence_last,
            "_backward_SequenceLast": <size_t><MXFCompute>sequence_last_backward}
