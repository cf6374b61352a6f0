"""Without its native kernel an import fails with one line that says what to do, not a stack trace."""

import subprocess
import sys

from conftest import SAMPLE

#: The kernel made unimportable in that process alone, as when it was never built.
WITHOUT_KERNEL = ("import sys; sys.modules['ngramflow.transforms._kernel'] = None; "
                  "from ngramflow.cli import main; sys.exit(main())")


def test_an_import_without_the_kernel_fails_with_one_line(tmp_path):
    ran = subprocess.run([sys.executable, "-c", WITHOUT_KERNEL, "import", f"{SAMPLE}/2012", "--output",
                          str(tmp_path / "out"), "--quiet"], capture_output=True, text=True)
    assert ran.returncode == 1
    [line] = ran.stderr.strip().splitlines()
    assert line.startswith("ngramflow: run failed: ngramflow's native parse kernel") and "make setup" in line, line
