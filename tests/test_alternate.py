"""benchmarks.alternate: a tree's imports of a corpus alternated with isal over its files, on the bundled sample."""

import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(ROOT, "tests", "data", "sample", "2012")


def test_each_round_runs_isal_then_the_import_and_the_ratios_are_each_rounds_own():
    done = subprocess.run([sys.executable, "-m", "benchmarks.alternate", SAMPLE, "--trees", ROOT, "--rounds", "2"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    runs = re.findall(r"^2012 (isal|\S+)\s+wall\s+([\d.]+) s\s+cpu\s+([\d.]+) s\s+rss\s+(\d+) MiB$", done.stdout,
                      re.MULTILINE)
    assert [who for who, *_ in runs] == ["isal", ROOT, "isal", ROOT]
    assert all(float(wall) > 0 and int(rss) > 0 for _, wall, _, rss in runs)
    # Each round's import over that round's isal, from walls printed to hundredths of a second: the interval
    # each round's ratio lies in, and so the least's and the largest's.
    walls = [float(wall) for _, wall, _, _ in runs]
    bounds = [((imp - 0.005) / (isal + 0.005), (imp + 0.005) / max(isal - 0.005, 1e-9))
              for isal, imp in (walls[:2], walls[2:])]
    summary = re.search(rf"median {re.escape(ROOT)}: [\d.]+ s, [\d.]+x isal; its rounds' own ratios "
                        r"([\d.]+)-([\d.]+)x, median [\d.]+x, at most 3x in (\d) of 2", done.stdout)
    assert summary, done.stdout
    least, largest, met = float(summary[1]), float(summary[2]), int(summary[3])
    lows, highs = sorted(low for low, _ in bounds), sorted(high for _, high in bounds)
    assert lows[0] - 0.005 <= least <= highs[0] + 0.005
    assert lows[1] - 0.005 <= largest <= highs[1] + 0.005
    assert sum(high <= 3 for high in highs) <= met <= sum(low <= 3 for low in lows)


def test_a_tree_whose_python_takes_another_checkouts_code_is_refused_before_anything_runs(tmp_path):
    """A tree with its .venv linked to this checkout's: its Python finds the package in the tree's own folder and
    every subpackage in this checkout (the editable install maps them here), so its imports would be this one's."""
    tree = tmp_path / "tree"
    tree.mkdir()
    os.symlink(os.path.dirname(os.path.dirname(sys.executable)), tree / ".venv")
    shutil.copytree(os.path.join(ROOT, "ngramflow"), tree / "ngramflow")
    shutil.copy(os.path.join(ROOT, "pyproject.toml"), tree)
    done = subprocess.run([sys.executable, "-m", "benchmarks.alternate", SAMPLE, "--trees", ROOT, str(tree),
                           "--rounds", "2"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 1
    assert done.stdout == ""  # nothing measured
    (message,) = done.stderr.strip().splitlines()
    assert message.startswith(f"{tree}: its Python takes ngramflow.pipeline from {ROOT}"), message
    assert "outside the tree" in message
