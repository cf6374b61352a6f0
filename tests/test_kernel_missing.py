"""Without its native kernel an import fails with one line that says what to do, not a stack trace."""

import subprocess
import sys

import pytest

from conftest import SAMPLE
from ngramflow.transforms import _kernel


def without(module: str) -> str:
    """A program that runs the command with ngramflow.transforms.MODULE made unimportable in its process
    alone, as when it was never built."""
    return (f"import sys; sys.modules['ngramflow.transforms.{module}'] = None; "
            "from ngramflow.cli import main; sys.exit(main())")


def _import_without(module: str, tmp_path) -> str:
    """The one line of stderr of an import without MODULE, which fails."""
    ran = subprocess.run([sys.executable, "-c", without(module), "import", f"{SAMPLE}/2012", "--output",
                          str(tmp_path / "out"), "--quiet"], capture_output=True, text=True)
    assert ran.returncode == 1
    [line] = ran.stderr.strip().splitlines()
    return line


def test_an_import_without_the_kernel_fails_with_one_line(tmp_path):
    line = _import_without("_kernel", tmp_path)
    assert line.startswith("ngramflow: run failed: ngramflow's native parse kernel") and "make setup" in line, line


@pytest.mark.skipif(not _kernel.runs_x86_64_v3(), reason="this CPU runs only the kernel's build for any CPU")
def test_an_import_without_the_kernels_build_for_the_cpu_fails_with_one_line(tmp_path):
    line = _import_without("_kernel_v3", tmp_path)
    assert line.startswith("ngramflow: run failed: ngramflow's native kernel for x86-64-v3") and "make setup" in line, line
