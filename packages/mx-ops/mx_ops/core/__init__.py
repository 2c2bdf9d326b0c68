"""The core of mx-ops: the operator registry, parameters, nodes, gradients,
partial inference, training mode, random state, operator resources, size
limits, the dtype table, the kernel ABI types (_types.pxd), the CUDA helpers
the families share, and the synchronous ``invoke``."""
