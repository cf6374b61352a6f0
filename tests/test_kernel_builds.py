"""The native kernel's two builds (transforms/native.py): the one for x86-64-v3 is taken where the CPU runs it,
and writes every file of an import and of its MKN model byte for byte as the build for any CPU does."""

import filecmp
import gzip
import os
import platform
import shutil
import subprocess
import sys

import pytest

from conftest import SAMPLE
from ngramflow.transforms import _kernel, native
from ngramflow.transforms.native import KERNEL_BUILD_VARIABLE, PORTABLE_BUILD
from ngramflow.transforms.sizing import SPILL_BYTES_VARIABLE

#: x86-64-v3's features and x86-64-v2's (the psABI's levels) as /proc/cpuinfo names them (abm: LZCNT, cx16:
#: CMPXCHG16B, pni: SSE3).
X86_64_V3_FLAGS = {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave", "cx16", "popcnt", "pni",
                   "sse4_1", "sse4_2", "ssse3"}


def cpu_flags() -> set[str]:
    with open("/proc/cpuinfo") as cpuinfo:
        return next(set(line.split(":", 1)[1].split()) for line in cpuinfo if line.startswith("flags"))


@pytest.mark.skipif(platform.machine() != "x86_64" or not os.path.exists("/proc/cpuinfo"),
                    reason="the CPU's features are read from Linux's /proc/cpuinfo, on x86-64")
def test_the_build_for_x86_64_v3_is_taken_where_the_cpu_runs_it():
    runs_v3 = X86_64_V3_FLAGS <= cpu_flags()
    assert _kernel.runs_x86_64_v3() == runs_v3
    assert native._kernel.__name__ == "ngramflow.transforms._kernel" + ("_v3" if runs_v3 else "")


def _with_build(build: str | None, env=None) -> dict[str, str]:
    """This process's environment with ENV, asking for the kernel's build BUILD (None: the one it chooses)."""
    env = {**os.environ, **(env or {})}
    env.pop(KERNEL_BUILD_VARIABLE, None)
    if build is not None:
        env[KERNEL_BUILD_VARIABLE] = build
    return env


def _ngramflow(build: str | None, *args, env=None) -> subprocess.CompletedProcess:
    """`ngramflow ARGS` in a process of its own, with the kernel's build BUILD (None: the one it chooses)."""
    return subprocess.run([sys.executable, "-m", "ngramflow.cli", *map(str, args)], env=_with_build(build, env),
                          capture_output=True, text=True, timeout=600)


def _written(folder) -> dict[str, str]:
    """{path under FOLDER: its full path} of every file but the manifest (which records the run's times)."""
    return {os.path.relpath(os.path.join(root, name), folder): os.path.join(root, name)
            for root, _, names in os.walk(folder) for name in names if name != "_manifest.json"}


@pytest.mark.skipif(not _kernel.runs_x86_64_v3(), reason="this CPU runs only the kernel's build for any CPU")
def test_the_build_for_any_cpu_is_taken_when_asked_for():
    def loaded(build):
        return subprocess.run([sys.executable, "-c", "from ngramflow.transforms import native; "
                               "print(native._kernel.__name__)"], env=_with_build(build), capture_output=True,
                              text=True, check=True).stdout.strip()

    assert loaded(None) == "ngramflow.transforms._kernel_v3"
    assert loaded(PORTABLE_BUILD) == "ngramflow.transforms._kernel"


def test_a_wrong_build_asked_for_is_one_line(tmp_path):
    done = _ngramflow("avx2", "import", os.path.join(SAMPLE, "2012"), "--output", tmp_path / "out")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"ngramflow: error: {KERNEL_BUILD_VARIABLE}='avx2': only '{PORTABLE_BUILD}' (the kernel built for any CPU) "
        "may be asked for; unset, the fastest build this CPU runs is taken"]
    assert not (tmp_path / "out").exists()


@pytest.mark.skipif(not _kernel.runs_x86_64_v3(), reason="this CPU runs only the kernel's build for any CPU: no "
                                                         "second build to compare it with")
def test_both_builds_write_the_same_files(big_corpus, tmp_path):
    # The 2020 files with one of malformed lines, read in runs through a small spill budget (many run files and
    # merges, the vocabulary's external sort in several ranges), case folded; and the 2012 files in their own
    # order, with an MKN model and its ARPA file.
    shutil.copytree(big_corpus / "2020", tmp_path / "2020")
    with gzip.open(tmp_path / "2020" / "eng" / "2-00009-of-00010.gz", "wt") as bad:
        bad.write("good line\t1990,3,2\t1991,1,1\nno tab here\nx y\t1990,3\nx y\t1990,a,1\n\t1990,1,1\n")
    imports = [(tmp_path / "2020", ["--merge", "runs", "--lowercase", "--pos", "keep"], {SPILL_BYTES_VARIABLE: "4000000"}),
               (big_corpus / "2012", ["--mkn-order", "3"], {})]
    for at, (inputs, options, env) in enumerate(imports):
        written = {}
        for build in (PORTABLE_BUILD, None):
            out = tmp_path / f"out-{at}-{build}"
            arpa = ["--arpa", tmp_path / f"model-{build}.arpa"] if "--mkn-order" in options else []
            done = _ngramflow(build, "import", inputs, "--output", out, "-q", *options, *arpa, env=env)
            assert done.returncode == 0, done.stderr
            written[build] = _written(out)
        assert written[PORTABLE_BUILD].keys() == written[None].keys()
        assert any(path.startswith("rejects") for path in written[None]) and any(
            path.startswith("vocabulary") for path in written[None])
        for path, portable in written[PORTABLE_BUILD].items():
            assert filecmp.cmp(portable, written[None][path], shallow=False), path
    assert filecmp.cmp(tmp_path / f"model-{PORTABLE_BUILD}.arpa", tmp_path / "model-None.arpa", shallow=False)
