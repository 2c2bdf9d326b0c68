"""mx-ndarray's environment variables, read and checked in one place.

MXNET_CUSTOM_OP_NUM_THREADS (default 16, MXNet's): the most threads that
run custom operators' Python callbacks at once.  Read when a thread may be
added, so a test can change it in a subprocess's environment.
"""
import os


def custom_op_num_threads():
    raw = os.environ.get("MXNET_CUSTOM_OP_NUM_THREADS", "").strip()
    if not raw:
        return 16
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"environment variable MXNET_CUSTOM_OP_NUM_THREADS must be an "
                         f"integer, got {raw!r}") from None
    if value < 1:
        raise ValueError(f"environment variable MXNET_CUSTOM_OP_NUM_THREADS must be >= 1, "
                         f"got {value}")
    return value
