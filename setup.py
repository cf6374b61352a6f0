"""The native parse kernel (native/, PyO3), built by setuptools-rust into the same wheel or editable install.

Declared here rather than under [tool.setuptools-rust] in pyproject.toml: from there setuptools-rust 1.13 wraps
build_ext once for each time setuptools finalizes the distribution, and pip built both extensions twice (a
wheel's build compiled the kernel 4 times, 66 s, instead of 2, 34 s: BENCHMARKS.md, fortieth round;
tests/test_install.py counts the builds).
"""

from setuptools import setup
from setuptools_rust import Binding, RustExtension


def kernel(module: str, features=(), rustc_flags=()) -> RustExtension:
    # Always an optimised build: an editable install would otherwise build it in debug mode, several times slower.
    return RustExtension(module, "native/Cargo.toml", binding=Binding.PyO3, debug=False,
                         features=["extension-module", *features], rustc_flags=list(rustc_flags))


setup(rust_extensions=[
    kernel("ngramflow.transforms._kernel"),  # the per-chunk parse kernel (transforms/kernel.py)
    # The same kernel for x86-64-v3 (AVX2, BMI2, ...), which transforms/native.py loads where the CPU runs it.
    kernel("ngramflow.transforms._kernel_v3", ["x86-64-v3"], ["-Ctarget-cpu=x86-64-v3"]),
])
