"""The CPU kernels of the spatial family (spatial_cpu.h, correlation_cpu.h), as
addresses."""
from mx_ops.core._types cimport MXFCompute, MXOpCall

cdef extern from "correlation_cpu.h" namespace "mxop" nogil:
    int correlation_run(MXOpCall* c)
    int correlation_backward_run(MXOpCall* c)

cdef extern from "spatial_cpu.h" namespace "mxop" nogil:
    int grid_generator_run(MXOpCall* c)
    int grid_generator_backward_run(MXOpCall* c)
    int bilinear_sampler_run(MXOpCall* c)
    int bilinear_sampler_backward_run(MXOpCall* c)
    int spatial_transformer_run(MXOpCall* c)
    int spatial_transformer_backward_run(MXOpCall* c)


def kernels():
    """{operator name: address} of the spatial family's operators and backwards."""
    return {"GridGenerator": <size_t><MXFCompute>grid_generator_run,
            "_backward_GridGenerator": <size_t><MXFCompute>grid_generator_backward_run,
            "BilinearSampler": <size_t><MXFCompute>bilinear_sampler_run,
            "_backward_BilinearSampler": <size_t><MXFCompute>bilinear_sampler_backward_run,
            "SpatialTransformer": <size_t><MXFCompute>spatial_transformer_run,
            "_backward_SpatialTransformer": <size_t><MXFCompute>spatial_transformer_backward_run,
            "Correlation": <size_t><MXFCompute>correlation_run,
            "_backward_Correlation": <size_t><MXFCompute>correlation_backward_run}
