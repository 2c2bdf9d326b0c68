# The C-level API of mx-engine: `from mx_engine cimport push_native, ...`.
from mx_engine._context cimport Context, DEV_CPU, DEV_GPU, DEV_CPU_PINNED
from mx_engine._engine cimport (
    EngineVar, OprBlock, RunContextC, NativeSyncFn, NativeAsyncFn, FreeFn, Var,
    PROP_NORMAL, PROP_COPY_FROM_GPU, PROP_COPY_TO_GPU, PROP_CPU_PRIORITIZED,
    PROP_ASYNC, PROP_DELETE_VAR, PROP_GPU_PRIORITIZED,
    push_native, push_native_async, complete_async, set_native_error,
    new_engine_var, delete_engine_var, delete_engine_var_then, wait_var, intern_name,
    profiler_memory_flag, profiler_record_memory)
