"""mx-ops: TBlob, kernels, the operator registry, shape/type inference, gradients, custom ops.

Depends on: storage, engine.  Empty until its issue lands: nothing here pretends
to work yet.
"""
__version__ = "0.1.0"
