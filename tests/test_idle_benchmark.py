"""benchmarks/idle.py: the machine's busy CPU time while a command runs, which counts its child processes."""

import os
import re
import subprocess
import sys

from benchmarks import idle

SPIN = "import time\nend = time.process_time() + {seconds}\nwhile time.process_time() < end: pass\n"


def test_a_command_and_its_child_process_count_as_busy():
    child = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {SPIN.format(seconds=0.4)!r}])"
    run = idle.sample([sys.executable, "-c", child], interval=0.05)
    assert run.code == 0 and run.samples and run.threads == {}
    assert run.busy >= 0.35  # the child's spin at least (other jobs only add)
    assert run.busy <= run.wall * (os.cpu_count() or 1) + 0.05


# A thread of a pool of transforms/pools.py spins 0.6 s, then the command waits 0.3 s more.
POOLED_SPIN = ("import time\nfrom ngramflow.transforms.pools import named_pool\n"
               "with named_pool(1, 'spinner') as pool:\n"
               "    pool.submit(exec, {spin!r}, {{}}).result()\n"
               "time.sleep(0.3)\n").format(spin=SPIN.format(seconds=0.6))


def test_by_thread_the_cpu_of_a_child_process_thread_is_its_own_under_its_pools_name():
    """The spinning thread is in a child process of the command: the tree's threads are sampled."""
    child = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {POOLED_SPIN!r}])"
    run = idle.sample([sys.executable, "-c", child], interval=0.05, by_thread=True)
    assert run.code == 0
    (spinner,) = [thread for thread in run.threads.values() if thread.name == "spinner_0"]
    assert 0.5 <= spinner.seconds <= 0.8, spinner.seconds
    assert max(spinner.cores) > 0.5
    assert len(spinner.cores) < len(run.samples), "it ended 0.3 s before the command: no samples after"


def test_the_command_line_reports_wall_busy_and_idle_and_passes_the_exit_code_on():
    done = subprocess.run([sys.executable, "-m", "benchmarks.idle", "--interval", "0.05", "--",
                           sys.executable, "-c", SPIN.format(seconds=0.2) + "raise SystemExit(3)"],
                          capture_output=True, text=True, timeout=60,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert done.returncode == 3, done.stderr
    assert re.match(r"wall \d+\.\d\d s, busy \d+\.\d\d CPU s, idle -?\d+\.\d\d CPU s of \d+ cores", done.stdout)


def test_the_command_line_lists_the_threads_of_enough_cpu_with_their_names():
    done = subprocess.run([sys.executable, "-m", "benchmarks.idle", "--interval", "0.05", "--threads", "--",
                           sys.executable, "-c", POOLED_SPIN], capture_output=True, text=True, timeout=60,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines()[2:]]
    (spinner,) = [row for row in rows if row[1] == "spinner_0"]
    assert 0.5 <= float(spinner[2]) <= 0.8 and spinner[3] == "s", done.stdout
    assert all(float(row[2]) >= idle.SHOWN_THREAD_SECONDS for row in rows), done.stdout
