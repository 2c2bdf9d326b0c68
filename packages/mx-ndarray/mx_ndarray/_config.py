"""mx-ndarray's environment variables, read and checked in one place.

MXNET_CUSTOM_OP_NUM_THREADS (default 16, MXNet's): the most threads that
run custom operators' Python callbacks at once.  Read when a thread may be
added, so a test can change it in a subprocess's environment.

MXNET_STORAGE_FALLBACK_LOG_VERBOSE (default 1, MXNet's): log once per
distinct operator call that falls back from sparse to dense storage; 0
turns the message off.  Read at each fallback.
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


def storage_fallback_log_verbose():
    raw = os.environ.get("MXNET_STORAGE_FALLBACK_LOG_VERBOSE", "").strip()
    if not raw:
        return True
    try:
        return int(raw) != 0
    except ValueError:
        raise ValueError(f"environment variable MXNET_STORAGE_FALLBACK_LOG_VERBOSE must be an "
                         f"integer, got {raw!r}") from None
