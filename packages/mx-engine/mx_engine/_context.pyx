"""Device contexts: ``cpu(i)``, ``cpu_pinned(i)``, ``gpu(i)`` as in MXNet 1.x."""
import threading

_DEVTYPE2STR = {DEV_CPU: "cpu", DEV_GPU: "gpu", DEV_CPU_PINNED: "cpu_pinned",
                DEV_CPU_SHARED: "cpu_shared"}
_DEVSTR2TYPE = {v: k for k, v in _DEVTYPE2STR.items()}

_default = threading.local()


cdef class Context:
    """A device and its id, e.g. ``cpu(0)`` or ``gpu(1)``.

    Parameters
    ----------
    device_type : {'cpu', 'gpu', 'cpu_pinned', 'cpu_shared'} or Context
        The kind of device, or a Context to copy.
    device_id : int, default 0
        Which device of that kind.

    Used as a context manager it becomes the default context of the calling
    thread (``with mx.gpu(0): ...``), as in MXNet.
    """

    devtype2str = _DEVTYPE2STR
    devstr2type = _DEVSTR2TYPE

    def __init__(self, device_type, device_id=0):
        if isinstance(device_type, Context):
            self.device_typeid = (<Context>device_type).device_typeid
            self.device_id = (<Context>device_type).device_id
            return
        if isinstance(device_type, str):
            if device_type not in _DEVSTR2TYPE:
                raise ValueError(
                    f"Context: 'device_type' must be one of "
                    f"{sorted(_DEVSTR2TYPE)}, got {device_type!r}")
            self.device_typeid = _DEVSTR2TYPE[device_type]
        elif isinstance(device_type, int) and device_type in _DEVTYPE2STR:
            self.device_typeid = device_type
        else:
            raise TypeError(
                f"Context: 'device_type' must be a device name such as 'cpu' "
                f"or a Context, got {device_type!r}")
        if not isinstance(device_id, int) or isinstance(device_id, bool):
            raise TypeError(f"Context: 'device_id' must be an int, got "
                            f"{type(device_id).__name__}")
        if not 0 <= device_id < MAX_DEVICE_ID:
            raise ValueError(f"Context: 'device_id' must be in [0, "
                             f"{MAX_DEVICE_ID}), got {device_id}")
        self.device_id = device_id

    @property
    def device_type(self):
        """The device kind as a string: 'cpu', 'gpu', 'cpu_pinned' or 'cpu_shared'."""
        return _DEVTYPE2STR[self.device_typeid]

    def __hash__(self):
        return hash((self.device_typeid, self.device_id))

    def __eq__(self, other):
        if not isinstance(other, Context):
            return NotImplemented
        return (self.device_typeid == (<Context>other).device_typeid
                and self.device_id == (<Context>other).device_id)

    def __repr__(self):
        return f"{_DEVTYPE2STR[self.device_typeid]}({self.device_id})"

    def __reduce__(self):
        return (Context, (self.device_type, self.device_id))

    def __enter__(self):
        self._old_ctx = current_context()
        _default.ctx = self
        return self

    def __exit__(self, *exc):
        _default.ctx = self._old_ctx
        self._old_ctx = None
        return False


def cpu(device_id=0):
    """The CPU context; ``device_id`` only names separate worker pools."""
    return Context("cpu", device_id)


def cpu_pinned(device_id=0):
    """Page-locked host memory, for fast copies to and from GPUs."""
    return Context("cpu_pinned", device_id)


def gpu(device_id=0):
    """The GPU context of CUDA device ``device_id``."""
    return Context("gpu", device_id)


def current_context():
    """The calling thread's default context (``cpu(0)`` unless set by ``with``)."""
    ctx = getattr(_default, "ctx", None)
    if ctx is None:
        ctx = _default.ctx = Context("cpu", 0)
    return ctx


def num_gpus():
    """Number of CUDA devices visible through CuPy (0 without CuPy)."""
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount()
    except Exception:  # no CuPy, no driver, or no device: all mean none usable
        return 0
