"""Builds of the native kernel compared on the same chunks, in one process, so that a shared machine's bursts
fall on every build alike (BENCHMARKS.md, "Counts parsed eight bytes at a time, a fourth time"):

    python -m benchmarks.kernel_builds TEXT --format 2020 --builds BEFORE.so AFTER.so [--rounds 5] [--reps 5]

TEXT is a decompressed n-gram file, cut into 8 MiB chunks at line ends. Each build (a lib_kernel.so, copied
into a folder of its own and loaded as a module) is given every chunk in turn, the builds' order reversed
from chunk to chunk, through `collapse_chunk` as transforms/kernel.py calls it; each chunk's best thread CPU
time of REPS is kept per build. Every build's result on every chunk must be the same. Each round is a fresh
process; printed: ns per year tuple (2020) or per line (2012, 2009), each round's and the medians.
"""

import argparse
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

CHUNK = 8 << 20


def _load(so: str, folder: str):
    path = os.path.join(folder, "_kernel.so")
    os.makedirs(folder)
    shutil.copy(so, path)
    spec = importlib.util.spec_from_file_location("_kernel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _flat(value):
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, tuple):
        return tuple(_flat(item) for item in value)
    return bytes(memoryview(value))


def one_round(text: str, fmt: str, builds: list[str], reps: int) -> list[float]:
    with tempfile.TemporaryDirectory(prefix="ngramflow-kernel-builds-") as scratch:
        kernels = [_load(so, os.path.join(scratch, str(i))) for i, so in enumerate(builds)]
        with open(text, "rb") as f:
            data = f.read()
        data = data[:data.rindex(b"\n") + 1]
        chunks, at = [], 0
        while at < len(data):
            end = data.rfind(b"\n", at, at + CHUNK) + 1 if at + CHUNK < len(data) else len(data)
            chunks.append(memoryview(data)[at:end])
            at = end
        units = data.count(b"\t") if fmt == "2020" else data.count(b"\n")
        for chunk in chunks:
            results = [_flat(k.collapse_chunk(chunk, fmt, 1400, 2100, False, False, True)) for k in kernels]
            if any(result != results[0] for result in results):
                raise SystemExit("the builds' results differ")
        best = [[float("inf")] * len(chunks) for _ in kernels]
        for rep in range(reps + 1):  # the first a warm-up
            for i, chunk in enumerate(chunks):
                order = range(len(kernels)) if (rep + i) % 2 == 0 else reversed(range(len(kernels)))
                for j in order:
                    start = time.thread_time()
                    found = kernels[j].collapse_chunk(chunk, fmt, 1400, 2100, False, False, False)
                    elapsed = time.thread_time() - start
                    if found is None:
                        raise SystemExit("a chunk the kernel does not vouch for")
                    if rep:
                        best[j][i] = min(best[j][i], elapsed)
        return [sum(times) / units * 1e9 for times in best]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("text", help="a decompressed n-gram file")
    parser.add_argument("--format", required=True, choices=["2012", "2020", "2009"])
    parser.add_argument("--builds", nargs="+", required=True, metavar="SO", help="lib_kernel.so files")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # a round, in this process
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    if args.one:
        print(" ".join(f"{t:.3f}" for t in one_round(args.text, args.format, args.builds, args.reps)))
        return 0
    times = []
    for r in range(args.rounds):
        line = subprocess.check_output([sys.executable, "-m", "benchmarks.kernel_builds", "--one", *argv])
        times.append([float(t) for t in line.split()])
        print(f"round {r}: " + "  ".join(f"{t:.2f}" for t in times[-1]), flush=True)
    for j, so in enumerate(args.builds):
        ns = [row[j] for row in times]
        ratio = statistics.median(row[j] / row[0] for row in times)
        print(f"{so}: median {statistics.median(ns):.2f} ns [{min(ns):.2f}-{max(ns):.2f}], "
              f"{ratio:.3f}x the first build's (median of the rounds' ratios)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
