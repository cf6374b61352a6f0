"""benchmarks/idle.py: the machine's busy CPU time while a command runs, which counts its child processes."""

import os
import re
import subprocess
import sys

from benchmarks import idle

SPIN = "import time\nend = time.process_time() + {seconds}\nwhile time.process_time() < end: pass\n"


def test_a_command_and_its_child_process_count_as_busy():
    child = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {SPIN.format(seconds=0.4)!r}])"
    wall, busy, samples, code = idle.sample([sys.executable, "-c", child], interval=0.05)
    assert code == 0 and samples
    assert busy >= 0.35  # the child's spin at least (other jobs only add)
    assert busy <= wall * (os.cpu_count() or 1) + 0.05


def test_the_command_line_reports_wall_busy_and_idle_and_passes_the_exit_code_on():
    done = subprocess.run([sys.executable, "-m", "benchmarks.idle", "--interval", "0.05", "--",
                           sys.executable, "-c", SPIN.format(seconds=0.2) + "raise SystemExit(3)"],
                          capture_output=True, text=True, timeout=60,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert done.returncode == 3, done.stderr
    assert re.match(r"wall \d+\.\d\d s, busy \d+\.\d\d CPU s, idle -?\d+\.\d\d CPU s of \d+ cores", done.stdout)
