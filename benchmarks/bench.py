"""Import throughput and memory, side by side with DuckDB and plain decompression.

    python -m benchmarks.bench [--rows 20000000] [--workdir .cache/bench]

Generates (once, cached) a deterministic synthetic corpus in both formats, then
in one run measures every contender as a separate process: wall time, rows/s
and the peak RSS of its whole process tree. Prints a table and rewrites the
"Import throughput" section of BENCHMARKS.md.
"""

import argparse
import glob
import json
import os
import platform
import re
import shutil
import subprocess
import sys

from benchmarks.measure import Measurement, run

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
START, END = "<!-- bench:import:start -->", "<!-- bench:import:end -->"
PY = sys.executable


#: Google's files hold millions of rows each; the generator's many small
#: per-prefix files are merged into this many files of the 2012 layout.
MERGED_FILES = 8


def corpus(workdir: str, rows: int, seed: int = 1) -> str:
    """A generated corpus of ``rows`` 2012-format rows, reused when already there.

    ``2012/`` is the generator's layout, ``2012-merged/`` the same bytes in
    MERGED_FILES files (gzip members concatenate into valid files, and every
    n-gram still lies within one file), ``2020/`` the 2020 layout.
    """
    path = os.path.join(workdir, f"corpus-{rows}")
    report = os.path.join(path, "corpus.json")
    if not os.path.exists(report):
        shutil.rmtree(path, ignore_errors=True)
        subprocess.run([PY, "-m", "ngramflow.cli", "sample-corpus", path, "--rows", str(rows), "--seed", str(seed),
                        "--orders", "1,2,3"], check=True, cwd=ROOT)
        _merge(data_files(path, "2012"), os.path.join(path, "2012-merged"), MERGED_FILES)
    return path


def _merge(files: list[str], folder: str, parts: int) -> None:
    os.makedirs(folder)
    target = sum(os.path.getsize(f) for f in files) / parts
    part, written, out = 0, 0, None
    for f in files:
        if out is None or (written >= target and part < parts - 1):
            if out:
                out.close()
                part += 1
            out, written = open(os.path.join(folder, f"part-{part:02d}.gz"), "wb"), 0
        with open(f, "rb") as fh:
            shutil.copyfileobj(fh, out)
        written += os.path.getsize(f)
    out.close()


def data_files(path: str, fmt: str) -> list[str]:
    return sorted(glob.glob(os.path.join(path, fmt, "**", "*.gz"), recursive=True))


def _import(inputs: list[str], output: str, *options: str) -> list[str]:
    return [PY, "-m", "ngramflow.cli", "import", *inputs, "--output", output, "--overwrite", "--quiet", *options]


def _peer(kind: str, output: str, files: list[str]) -> list[str]:
    return [PY, "-m", "benchmarks.peers", kind, output, *files]


def _last_error(output: str) -> str:
    """What went wrong, for the table: the innermost exception's message if there is one."""
    lines = [line.strip() for line in output.splitlines() if "rror" in line or "failed" in line] \
        or output.strip().splitlines()[-1:]
    found = re.search(r"(\w+(?:Exception|Error): [^(]*)", lines[-1])
    return (found.group(1) if found else lines[-1]).strip()[:160]


def _checked(name: str, m: Measurement) -> Measurement:
    if m.returncode != 0:
        raise SystemExit(f"{name} failed ({m.returncode}):\n{m.output[-3000:]}")
    return m


def flink_available() -> bool:
    text = subprocess.run([PY, "-m", "ngramflow.cli", "import", "--help"], capture_output=True, text=True,
                          cwd=ROOT).stdout
    return "--runner" in text


def throughput(workdir: str, rows: int) -> tuple[list[dict], dict]:
    path = corpus(workdir, rows)
    files12, files20 = data_files(path, "2012-merged"), data_files(path, "2020")
    meta = json.load(open(os.path.join(path, "corpus.json")))
    out = os.path.join(workdir, "out")
    contenders = [
        ("gzip decompression (Python gzip)", "2012", _peer("gzip", "-", files12)),
        ("isal decompression (fastest from PyPI)", "2012", _peer("isal", "-", files12)),
        ("DuckDB 2 threads, GROUP BY -> Parquet", "2012", _peer("duckdb-2012", out + ".parquet", files12)),
        ("ngramflow import, embedded, 1 worker", "2012", _import(files12, out)),
        ("ngramflow import, embedded, 2 workers", "2012", _import(files12, out, "--workers", "2")),
        ("plain Python dict aggregation", "2012", _peer("python-dict", "-", files12)),
        ("DuckDB 2 threads, GROUP BY -> Parquet", "2020", _peer("duckdb-2020", out + ".parquet", files20)),
        ("ngramflow import, embedded, 1 worker", "2020", _import(files20, out)),
    ]
    if flink_available():
        contenders.append(("ngramflow import, Flink [local] batch", "2012",
                           _import(files12, out, "--runner", "flink")))
    results = []
    for name, fmt, command in contenders:
        print(f"  {name} ({fmt}) ...", file=sys.stderr, flush=True)
        m = run(command, env={"PYTHONPATH": ROOT})
        failure = None if m.returncode == 0 else _last_error(m.output)
        results.append({"name": name, "format": fmt, "wall": m.wall_seconds, "rss": m.peak_rss_bytes,
                        "failed": failure})
    sizes = {fmt: sum(os.path.getsize(f) for f in fs) for fmt, fs in (("2012", files12), ("2020", files20))}
    return results, {"rows": meta["rows_2012"], "files": {"2012": len(files12), "2020": len(files20)},
                     "bytes": sizes, "ngrams": meta["ngrams"]}


def memory_scaling(workdir: str, rows: int) -> list[dict]:
    """Peak RSS of the embedded import at 1x, 2x and 4x a quarter of the benchmark corpus."""
    results = []
    for factor in (1, 2, 4):
        path = corpus(workdir, rows * factor // 4)
        m = _checked("import", run(_import(data_files(path, "2012-merged"), os.path.join(workdir, "out-scale")),
                                   env={"PYTHONPATH": ROOT}))
        results.append({"rows": rows * factor // 4, "wall": m.wall_seconds, "rss": m.peak_rss_bytes})
    return results


def read_stage_memory(workdir: str, rows: int) -> list[dict]:
    """Peak RSS of the per-file read stage alone on one file, and on one 4x larger file."""
    files = data_files(corpus(workdir, rows), "2012-merged")
    quarter = files[: max(1, len(files) // 4)]
    results = []
    for name, members in (("1x", quarter), ("4x", files)):
        big = os.path.join(workdir, f"one-file-{name}.gz")
        with open(big, "wb") as out:  # gzip members concatenate into one valid file
            for f in members:
                with open(f, "rb") as fh:
                    shutil.copyfileobj(fh, out)
        m = _checked("read stage", run([PY, "-m", "benchmarks.read_stage", big], env={"PYTHONPATH": ROOT}))
        results.append({"file": name, "bytes": os.path.getsize(big), "rows": int(m.output.split()[-1]),
                        "wall": m.wall_seconds, "rss": m.peak_rss_bytes})
    return results


def _mb(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB"


def report(results, meta, scaling, stage, command: str) -> str:
    duck = {r["format"]: r["wall"] for r in results if r["name"].startswith("DuckDB")}
    isal = next(r["wall"] for r in results if r["name"].startswith("isal"))
    rows = meta["rows"]
    lines = [
        START,
        "## Import throughput (embedded runner)",
        "",
        f"Reproduce: `{command}` (from a fresh clone; generates the corpus once under `.cache/bench`).",
        "",
        f"Machine: {os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}. "
        f"Corpus: synthetic, seed 1, {rows:,} rows in the 2012 format (the generator's per-prefix files merged "
        f"into {meta['files']['2012']} files, as Google's hold millions of rows each; "
        f"{meta['bytes']['2012'] / 1e6:,.1f} MB gz) and the same data in the 2020 format "
        f"({meta['files']['2020']} files, {meta['bytes']['2020'] / 1e6:,.1f} MB gz); "
        f"n-grams per order {meta['ngrams']}.",
        "",
        "| contender | input | wall s | rows/s | peak RSS (tree) | throughput vs DuckDB | wall vs isal decompression |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        if r["failed"]:
            lines.append(f"| {r['name']} | {r['format']} | failed after {r['wall']:.0f} s: `{r['failed']}` "
                         f"| | {_mb(r['rss'])} | | |")
            continue
        lines.append(f"| {r['name']} | {r['format']} | {r['wall']:.2f} | {rows / r['wall'] / 1e6:.2f}M | "
                     f"{_mb(r['rss'])} | {duck[r['format']] / r['wall']:.2f}x | {r['wall'] / isal:.1f}x |")
    lines += [
        "",
        "Throughput vs DuckDB = DuckDB's wall time / this wall time (above 1 is faster than DuckDB).",
        "",
        "### Peak memory as the corpus grows (embedded runner, 1 worker)",
        "",
        "| 2012 rows | wall s | peak RSS (tree) |",
        "| ---: | ---: | ---: |",
    ]
    lines += [f"| {s['rows']:,} | {s['wall']:.2f} | {_mb(s['rss'])} |" for s in scaling]
    lines += [
        "",
        "The embedded runner keeps each shuffled collection in memory, so its peak grows with the number of",
        "distinct n-grams; for inputs beyond a workstation's memory, run on Flink.",
        "",
        "### Per-file read stage alone (one gzip file, streamed in 8 MiB chunks)",
        "",
        "| file | compressed | rows | wall s | peak RSS |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    lines += [f"| {s['file']} | {s['bytes'] / 1e6:,.1f} MB | {s['rows']:,} | {s['wall']:.2f} | {_mb(s['rss'])} |"
              for s in stage]
    lines += ["", END]
    return "\n".join(lines)


def update_benchmarks_md(section: str, start: str = START, end: str = END) -> None:
    """Replace the text between the markers START and END of BENCHMARKS.md with SECTION (or append it)."""
    path = os.path.join(ROOT, "BENCHMARKS.md")
    text = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
    if start in text and end in text:
        text = text[:text.index(start)] + section + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    with open(path, "w") as fh:
        fh.write(text)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=20_000_000, help="2012-format rows of the corpus")
    parser.add_argument("--workdir", default=os.path.join(ROOT, ".cache", "bench"), help="corpora and outputs")
    args = parser.parse_args(argv)
    os.makedirs(args.workdir, exist_ok=True)
    print("throughput:", file=sys.stderr)
    results, meta = throughput(args.workdir, args.rows)
    print("memory scaling:", file=sys.stderr)
    scaling = memory_scaling(args.workdir, args.rows)
    print("read stage:", file=sys.stderr)
    stage = read_stage_memory(args.workdir, args.rows)
    command = "make bench" if args.rows == 20_000_000 else f"python -m benchmarks.bench --rows {args.rows}"
    section = report(results, meta, scaling, stage, command)
    print(section)
    update_benchmarks_md(section)


if __name__ == "__main__":
    main()
