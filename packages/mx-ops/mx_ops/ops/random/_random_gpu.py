"""GPU compute of the random samplers and _shuffle: cuRAND's Philox4x32-10
through CuPy, seeded per call from the (seed, offset) the invoker reserved
(params["_random_state"]), so a GPU call is as reproducible and as
independent of other calls as a CPU one.  The values differ from the CPU
stream (cuRAND orders its counters its own way).  float16 is drawn as
float32 and rounded, as on the CPU.  Importing this module without CuPy
raises ImportError, and the GPU computes are then not registered."""
import cupy

_MASK64 = (1 << 64) - 1


def compile_cases():
    """No kernel sources of this module's own for the NVRTC check: the
    draws are cuRAND's and CuPy's own (tested by CuPy)."""
    return []


def _state(params):
    """A cuRAND Philox RandomState for this call: splitmix64 of (seed,
    offset), because cuRAND takes one 64-bit seed."""
    seed, offset = params["_random_state"]
    z = (seed ^ (offset * 0x9E3779B97F4A7C15)) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return cupy.random.RandomState(z ^ (z >> 31),
                                   method=cupy.cuda.curand.CURAND_RNG_PSEUDO_PHILOX4_32_10)


def _draw(name, params, out):
    rs = _state(params)
    dtype = "float32" if out.dtype == cupy.float16 else out.dtype
    if name == "uniform":
        return rs.uniform(params["low"], params["high"], out.shape, dtype)
    if name == "normal":
        return rs.normal(params["loc"], params["scale"], out.shape, dtype)
    return rs.randint(params["low"], params["high"], out.shape, dtype)


def compute(name):
    """``fn(params, inputs, outputs, reqs)`` over CuPy arrays, on the current
    stream."""
    def run(params, inputs, outputs, reqs):
        if reqs[0] == "null":
            return
        if reqs[0] == "add":
            raise ValueError(f"{name}: req 'add' is not supported by random samplers")
        out = outputs[0]
        if name == "shuffle":
            data = inputs[0]
            if data.ndim == 0 or data.shape[0] < 2:
                out[...] = data
                return
            perm = _state(params).permutation(data.shape[0])
            out[...] = data[perm]        # a gather copies first, so in place is safe
            return
        out[...] = _draw(name, params, out)
    return run
