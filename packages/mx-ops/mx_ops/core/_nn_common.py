"""Type inference shared by the neural-network operators: every input has
the first input's dtype, which must be a float type."""
from mx_ops.core.registry import TypeInferenceError

FLOATS = ("float16", "float32", "float64")


def same_float_types(op, names, allowed=FLOATS, nout=1):
    """infer_type for ``op`` whose inputs are named by ``names(params)``:
    ``nout(params)`` outputs (or an int) of the first input's dtype."""
    def infer(params, dtypes):
        args = names(params)
        for name, d in zip(args[1:], dtypes[1:]):
            if d != dtypes[0]:
                raise TypeInferenceError(f"{op}: argument '{name}' has dtype {d}, which "
                                         f"differs from '{args[0]}' {dtypes[0]}")
        if dtypes[0] not in allowed:
            raise TypeInferenceError(f"{op}: argument '{args[0]}' has dtype {dtypes[0]}; "
                                     f"supported: {', '.join(allowed)}")
        return [dtypes[0]] * (nout(params) if callable(nout) else nout)
    return infer
