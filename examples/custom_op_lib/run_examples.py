"""Builds the example libraries with the system compilers and runs them.

    python examples/custom_op_lib/run_examples.py
"""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

import mx
import mx_ops

HERE = os.path.dirname(os.path.abspath(__file__))


def build(out_dir):
    """{name: library path}; the GPU example only where nvcc is."""
    cxx = shutil.which("c++") or shutil.which("g++")
    if cxx is None:
        sys.exit("run_examples: no C++ compiler ('c++' or 'g++') on PATH")
    inc = mx_ops.get_include()
    libs = {}
    for name in ("gemm_lib", "stateful_lib"):
        libs[name] = os.path.join(out_dir, f"lib{name}.so")
        subprocess.run([cxx, "-shared", "-fPIC", "-O2", "-std=c++17", "-I", inc,
                        os.path.join(HERE, f"{name}.cc"), "-o", libs[name]], check=True)
    nvcc = shutil.which("nvcc")
    if nvcc is not None:
        libs["relu_lib"] = os.path.join(out_dir, "librelu_lib.so")
        subprocess.run([nvcc, "-shared", "-Xcompiler", "-fPIC", "-O2", "-std=c++17", "-I", inc,
                        os.path.join(HERE, "relu_lib.cu"), "-o", libs["relu_lib"]], check=True)
    return libs


def main():
    with tempfile.TemporaryDirectory() as tmp:
        libs = build(tmp)
        for path in libs.values():
            print("loaded", path, "->", mx.library.load(path))
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.ones((3, 4), np.float32)
    c = mx.nd.my_gemm(mx.nd.array(a), mx.nd.array(b))
    print("my_gemm:\n", c.asnumpy(), "\nmatches NumPy:", np.allclose(c.asnumpy(), a @ b))
    for _ in range(3):
        print("my_counter_scale:", mx.nd.my_counter_scale(mx.nd.array([1.0, 2.0]),
                                                          step=0.5).asnumpy())
    if "relu_lib" in libs:
        print("my_relu:", mx.nd.my_relu(mx.nd.array([-1.0, 2.0])).asnumpy())


if __name__ == "__main__":
    main()
