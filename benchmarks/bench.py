"""Import throughput and memory, side by side with DuckDB and plain decompression.

    python -m benchmarks.bench [--rows 20000000] [--large-rows 80000000] [--workdir .cache/bench]

Generates (once, cached) deterministic synthetic corpora in both formats, then
in one run measures every contender as a separate process: wall time, CPU time,
rows/s and the peak RSS of its whole process tree; the larger corpus only for
isal, DuckDB, ngramflow's default and Flink. Then one import of the larger
corpus under a sampling profiler gives the time of each stage
(benchmarks/stages.py). Prints a table and rewrites the "Import throughput"
section of BENCHMARKS.md.
"""

import argparse
import glob
import json
import os
import platform
import random
import re
import shutil
import subprocess
import sys
import threading

from benchmarks import stages
from benchmarks.measure import Measurement, run, warmed

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
START, END = "<!-- bench:import:start -->", "<!-- bench:import:end -->"
PY = sys.executable


#: Google's files hold millions of rows each; the generator's many small
#: per-prefix files are merged into this many files of the 2012 layout.
MERGED_FILES = 8


#: The orders of the benchmark corpus, and of its 1-gram shaped one (issue 16 measured one: many distinct
#: n-grams of a few rows each, short ones, where an import's cost per n-gram weighs most against decompression).
ORDERS, UNIGRAMS = "1,2,3", "1"


def corpus(workdir: str, rows: int, seed: int = 1, orders: str = ORDERS) -> str:
    """A generated corpus of ``rows`` 2012-format rows of ORDERS, reused when already there.

    ``2012/`` is the generator's layout, ``2012-merged/`` the same bytes in
    MERGED_FILES files (gzip members concatenate into valid files, and every
    n-gram still lies within one file), ``2020/`` the 2020 layout.
    """
    path = os.path.join(workdir, f"corpus-{rows}" + ("" if orders == ORDERS else f"-orders-{orders}"))
    report = os.path.join(path, "corpus.json")
    if not os.path.exists(report):
        shutil.rmtree(path, ignore_errors=True)
        subprocess.run([PY, "-m", "ngramflow.cli", "sample-corpus", path, "--rows", str(rows), "--seed", str(seed),
                        "--orders", orders], check=True, cwd=ROOT)
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


#: Rows per file of the sorted layout: the 2012 export's files hold millions of rows each.
SORTED_FILE_ROWS = 4_000_000


def sorted_layout(path: str) -> str:
    """The corpus at PATH as the 2012 export lays its files out, reused when already there: each order's rows
    sorted by n-gram (byte order) and cut, where the n-gram changes, into files of about SORTED_FILE_ROWS
    rows, named as Google names them (``googlebooks-eng-all-{n}gram-20120701-{i:02d}.gz``): the input an
    import may total in its own order (transforms/sorted_input.py). ``2012-merged/`` is not: it joins the
    generator's per-prefix files in name order."""
    folder = os.path.join(path, "2012-sorted")
    if os.path.exists(os.path.join(folder, "done")):
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    for order in range(1, 6):
        files = [f for f in data_files(path, "2012") if f"-{order}gram-" in os.path.basename(f)]
        if files:
            _sort_and_cut(files, folder, order)
    open(os.path.join(folder, "done"), "w").close()
    return folder


def _sort_and_cut(files: list[str], folder: str, order: int) -> None:
    from isal import igzip

    sort = subprocess.Popen(["sort", "-S", "1G"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env={**os.environ, "LC_ALL": "C"})

    def feed():
        with sort.stdin:
            for f in files:
                with igzip.open(f, "rb") as fh:
                    shutil.copyfileobj(fh, sort.stdin, 1 << 20)

    feeder = threading.Thread(target=feed)
    feeder.start()
    part, rows, last, out = 0, 0, None, None
    for line in sort.stdout:
        key = line.split(b"\t", 1)[0]
        if out is None or (rows >= SORTED_FILE_ROWS and key != last):
            if out:
                out.close()
            out = igzip.open(os.path.join(folder, f"googlebooks-eng-all-{order}gram-20120701-{part:02d}.gz"), "wb")
            part, rows = part + 1, 0
        out.write(line)
        rows, last = rows + 1, key
    out.close()
    feeder.join()
    if sort.wait():
        raise SystemExit(f"sort failed ({sort.returncode})")


def shuffled_layout(path: str, seed: int = 1) -> str:
    """The corpus at PATH's sorted layout (sorted_layout) with each file's n-grams in a random order (SEED), the
    rows of an n-gram still together, its years ascending, and the files' names kept: Google's names on files
    that are not sorted, such as a generator writes that does not sort, reused when already there. The import
    sees their first lines out of order and totals them through run files."""
    folder, source = os.path.join(path, "2012-shuffled"), sorted_layout(path)
    if os.path.exists(os.path.join(folder, "done")):
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    random_source = os.path.join(folder, "random-source")
    with open(random_source, "wb") as fh:  # sort -R orders by a hash its random source keys: fixed here
        fh.write(random.Random(seed).randbytes(1 << 16))
    for name in sorted(os.listdir(source)):
        if name.endswith(".gz"):
            _shuffle_file(os.path.join(source, name), os.path.join(folder, name), random_source)
    open(os.path.join(folder, "done"), "w").close()
    return folder


def _shuffle_file(source: str, target: str, random_source: str) -> None:
    from isal import igzip

    # -k1,1 -R: a hash of the n-gram alone orders the lines, so an n-gram's lines stay together, in their
    # own order by the last resort of comparing whole lines (the year first).
    shuffle = subprocess.Popen(["sort", "-S", "1G", "-t", "\t", "-k1,1", "-R", f"--random-source={random_source}"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, env={**os.environ, "LC_ALL": "C"})

    def feed():
        with shuffle.stdin, igzip.open(source, "rb") as fh:
            shutil.copyfileobj(fh, shuffle.stdin, 1 << 20)

    feeder = threading.Thread(target=feed)
    feeder.start()
    with igzip.open(target, "wb") as out:
        shutil.copyfileobj(shuffle.stdout, out, 1 << 20)
    feeder.join()
    if shuffle.wait():
        raise SystemExit(f"sort failed ({shuffle.returncode})")


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


def build_flink() -> None:
    """Flink's Java side built before an import on it is measured (once, and cached: pipeline/flink/provision.py).
    Built by the first Flink import measured, it was that import's time: on a fresh machine, 165 s for 20M rows
    that take 23 s."""
    from ngramflow.pipeline.flink import provision

    provision.ensure_job_server()
    provision.ensure_launcher()


#: The layouts of a benchmark corpus that every size measures besides ``2012``: (input label, folder).
LAYOUTS = (("2012 sorted", "2012-sorted"), ("2012 shuffled", "2012-shuffled"), ("2012 one file", "2012-one"),
           ("2020", "2020"))
#: The layouts of the 1-gram shaped corpus (UNIGRAMS), measured at the largest size: the 2012 files as the
#: export names and cuts them (by first letters), and the 2020 shards.
UNIGRAM_LAYOUTS = (("2012 1-grams", "2012"), ("2020 1-grams", "2020"))


def one_file_layout(path: str) -> str:
    """The corpus at PATH as one file, reused when already there: the files of ``2012-merged/`` joined (gzip
    members concatenate), which one worker reads in order while the other has nothing to read."""
    folder = os.path.join(path, "2012-one")
    if not os.path.exists(folder):
        shutil.rmtree(folder + ".tmp", ignore_errors=True)  # an interrupted run's
        _merge(data_files(path, "2012-merged"), folder + ".tmp", 1)
        os.replace(folder + ".tmp", folder)
    return folder


def _contenders(path: str, out: str, full: bool, flink: bool) -> list[tuple[str, str, list[str]]]:
    """(name, input format, command) of every contender on one corpus; ``full``: the slower peers too;
    Flink if ``flink``."""
    files12 = data_files(path, "2012-merged")
    contenders = [("gzip decompression (Python gzip)", "2012", _peer("gzip", "-", files12))] if full else []
    contenders += [
        ("isal decompression (fastest from PyPI)", "2012", _peer("isal", "-", files12)),
        ("DuckDB 2 threads, GROUP BY -> Parquet", "2012", _peer("duckdb-2012", out + ".parquet", files12)),
        ("ngramflow import, embedded, default workers", "2012", _import(files12, out)),
    ]
    if full:
        contenders += [("ngramflow import, embedded, 1 worker", "2012", _import(files12, out, "--workers", "1")),
                       ("plain Python dict aggregation", "2012", _peer("python-dict", "-", files12))]
    contenders += layout_contenders(path, LAYOUTS, out)
    if flink and flink_available():
        build_flink()
        contenders.append(("ngramflow import, Flink [local] batch", "2012",
                           _import(files12, out, "--runner", "flink")))
    return contenders


def layout_contenders(path: str, layouts, out: str) -> list[tuple[str, str, list[str]]]:
    """(name, input, command) of isal, DuckDB and the default import on each of the LAYOUTS ((input, folder))
    of the corpus at PATH."""
    contenders = []
    for fmt, layout in layouts:
        files, duckdb = data_files(path, layout), "duckdb-2020" if fmt.startswith("2020") else "duckdb-2012"
        contenders += [
            ("isal decompression (fastest from PyPI)", fmt, _peer("isal", "-", files)),
            ("DuckDB 2 threads, GROUP BY -> Parquet", fmt, _peer(duckdb, out + ".parquet", files)),
            ("ngramflow import, embedded, default workers", fmt, _import(files, out)),
        ]
    return contenders


def _described(path: str, layouts) -> dict:
    """What the report says of the corpus at PATH: its rows, and the files and bytes of each of its LAYOUTS."""
    files = {fmt: data_files(path, layout) for fmt, layout in layouts}
    info = json.load(open(os.path.join(path, "corpus.json")))
    return {"rows": info["rows_2012"], "files": {f: len(fs) for f, fs in files.items()},
            "bytes": {f: sum(os.path.getsize(p) for p in fs) for f, fs in files.items()}, "ngrams": info["ngrams"]}


def _emptied(command: list[str]) -> None:
    """The output folder of an import COMMAND deleted, outside its measure: the dataset of the contender before
    (101 MB, written out to disk by then: 0.06 s to delete, as --overwrite would) is not this import's work."""
    if "--output" in command:
        shutil.rmtree(command[command.index("--output") + 1], ignore_errors=True)


def throughput(workdir: str, sizes: list[int], flink: bool = True, slow: bool = True) -> tuple[list[dict], dict]:
    """Every contender on the corpus of each size, one after the other; the first size gets the slow peers
    (unless not ``slow``), the last the 1-gram shaped corpus too."""
    results, meta = [], {}
    for index, rows in enumerate(sizes):
        path = corpus(workdir, rows)
        shuffled_layout(path)  # and the sorted one it is made of
        one_file_layout(path)
        meta[rows] = _described(path, (("2012", "2012-merged"), *LAYOUTS))
        out = os.path.join(workdir, "out")
        corpora = [(meta[rows], _contenders(path, out, slow and index == 0, flink))]
        if index == len(sizes) - 1:
            unigrams = corpus(workdir, rows, orders=UNIGRAMS)
            meta[f"{rows} 1-grams"] = _described(unigrams, UNIGRAM_LAYOUTS)
            corpora.append((meta[f"{rows} 1-grams"], layout_contenders(unigrams, UNIGRAM_LAYOUTS, out)))
        for described, contenders in corpora:
            warm = None
            for name, fmt, command in contenders:
                print(f"  {name} ({fmt}, {rows:,} rows) ...", file=sys.stderr, flush=True)
                if (files := [arg for arg in command if arg.endswith(".gz")]) != warm:
                    warmed(files)
                    warm = files
                _emptied(command)
                m = run(command, env={"PYTHONPATH": ROOT})
                failure = None if m.returncode == 0 else _last_error(m.output)
                results.append({"name": name, "format": fmt, "size": rows, "rows": described["rows"],
                                "wall": m.wall_seconds, "cpu": m.cpu_seconds, "rss": m.peak_rss_bytes,
                                "failed": failure})
    return results, meta


def memory_scaling(workdir: str, rows: int) -> list[dict]:
    """Peak RSS of the embedded import at 1x, 2x and 4x a quarter of the benchmark corpus."""
    results = []
    for factor in (1, 2, 4):
        path = corpus(workdir, rows * factor // 4)
        m = _checked("import", run(_import(data_files(path, "2012-merged"), os.path.join(workdir, "out-scale"),
                                           "--workers", "1"), env={"PYTHONPATH": ROOT}))
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


def stage_breakdown(workdir: str, rows: int) -> tuple[list[str], str]:
    """The per-stage table of one profiled embedded import of the 2012 corpus of ROWS (benchmarks/stages.py),
    and what it ran on."""
    files = data_files(corpus(workdir, rows), "2012-merged")
    return stages.table(*stages.profile(files, 1, 100)), f"{rows:,} rows of the 2012 format, 1 worker"


def report(results, meta, scaling, stage, command: str, breakdown=None) -> str:
    duck = {(r["size"], r["format"]): r["wall"] for r in results if r["name"].startswith("DuckDB")}
    isal = {(r["size"], r["format"]): r["wall"] for r in results if r["name"].startswith("isal")}
    lines = [
        START,
        "## Import throughput (embedded runner)",
        "",
        f"Reproduce: `{command}` (from a fresh clone; generates the corpus once under `.cache/bench`).",
        "",
        f"Machine: {os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}; "
        f"load average {os.getloadavg()[0]:.1f} when the run ended (other jobs share the machine: CPU time "
        "is the fairer comparison). Corpora: synthetic, seed 1, in the 2012 format (the generator's "
        "per-prefix files merged into a few files, as Google's hold millions of rows each; \"2012 sorted\": "
        "each order sorted and cut into files of 4M rows named as the export names its files, which Google's "
        "are and which an import totals in their own order; \"2012 shuffled\": those files with their n-grams "
        "in a random order, each n-gram's rows together; \"2012 one file\": the merged files joined into one) "
        "and the same data in the 2020 format; at the larger size, a corpus of 1-grams alone too (\"1-grams\", "
        "seed 1: many distinct n-grams of few rows each, as issue 16 measured), its 2012 files as the export "
        "names and cuts them:",
        "",
    ]
    for m in meta.values():
        layouts = "; ".join(f"{fmt} {count} files, {m['bytes'][fmt] / 1e6:,.1f} MB gz"
                            for fmt, count in m["files"].items())
        lines.append(f"- {m['rows']:,} rows: {layouts}; n-grams per order {m['ngrams']}")
    lines += [
        "",
        "| contender | input | rows | wall s | CPU s | rows/s | peak RSS (tree) | throughput vs DuckDB "
        "| wall vs isal decompression |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        key = (r["size"], r["format"])
        if r["failed"]:
            lines.append(f"| {r['name']} | {r['format']} | {r['rows']:,} | failed after {r['wall']:.0f} s: "
                         f"`{r['failed']}` | | | {_mb(r['rss'])} | | |")
            continue
        lines.append(f"| {r['name']} | {r['format']} | {r['rows']:,} | {r['wall']:.2f} | {r['cpu']:.2f} | "
                     f"{r['rows'] / r['wall'] / 1e6:.2f}M | {_mb(r['rss'])} | {duck[key] / r['wall']:.2f}x | "
                     f"{r['wall'] / isal[key]:.1f}x |")
    lines += ["", "Throughput vs DuckDB = DuckDB's wall time / this wall time (above 1 is faster than DuckDB)."]
    if scaling:
        lines += ["", "### Peak memory as the corpus grows (embedded runner, 1 worker)", "",
                  "| 2012 rows | wall s | peak RSS (tree) |", "| ---: | ---: | ---: |"]
        lines += [f"| {s['rows']:,} | {s['wall']:.2f} | {_mb(s['rss'])} |" for s in scaling]
        lines += ["", "The peak grows while a worker's run tables still fit its spill budget (`SPILL_BYTES` in",
                  "`transforms/sizing.py`), then holds: the scale benchmark below measures it to 1.43 billion rows."]
    if stage:
        lines += ["", "### Per-file read stage alone (one gzip file, streamed in 8 MiB chunks)", "",
                  "| file | compressed | rows | wall s | peak RSS |", "| --- | ---: | ---: | ---: | ---: |"]
        lines += [f"| {s['file']} | {s['bytes'] / 1e6:,.1f} MB | {s['rows']:,} | {s['wall']:.2f} | "
                  f"{_mb(s['rss'])} |" for s in stage]
    if breakdown:
        rows, what = breakdown
        lines += ["", f"### Where the import's CPU time goes ({what}, one run under py-spy)", "",
                  *rows, "", "From `python -m benchmarks.stages FILES` (its docstring says how samples are "
                  "charged); the profiler slows the run, so read the shares."]
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
    parser.add_argument("--large-rows", type=int, default=80_000_000,
                        help="rows of a second, larger corpus for the fast contenders (0: none)")
    parser.add_argument("--workdir", default=os.path.join(ROOT, ".cache", "bench"), help="corpora and outputs")
    parser.add_argument("--no-flink", action="store_true",
                        help="leave Flink out (its local job server's ports may be taken by another Flink job)")
    parser.add_argument("--throughput-only", action="store_true",
                        help="only the throughput table, printed; BENCHMARKS.md is left as it is")
    parser.add_argument("--fast-only", action="store_true",
                        help="only isal, DuckDB and ngramflow's default, at every size")
    args = parser.parse_args(argv)
    os.makedirs(args.workdir, exist_ok=True)
    print("throughput:", file=sys.stderr)
    results, meta = throughput(args.workdir, [args.rows] + ([args.large_rows] if args.large_rows else []),
                               not args.no_flink, not args.fast_only)
    options = [f"--rows {args.rows}", f"--large-rows {args.large_rows}"] + \
        [flag for flag, on in (("--no-flink", args.no_flink), ("--fast-only", args.fast_only)) if on]
    if args.throughput_only:
        print(report(results, meta, [], [], "python -m benchmarks.bench " + " ".join(options + ["--throughput-only"])))
        return
    print("stage breakdown:", file=sys.stderr)
    breakdown = stage_breakdown(args.workdir, args.large_rows or args.rows)
    print("memory scaling:", file=sys.stderr)
    scaling = memory_scaling(args.workdir, args.rows)
    print("read stage:", file=sys.stderr)
    stage = read_stage_memory(args.workdir, args.rows)
    default = args.rows == 20_000_000 and args.large_rows == 80_000_000 and not args.no_flink and not args.fast_only
    command = "make bench" if default else "python -m benchmarks.bench " + " ".join(options)
    section = report(results, meta, scaling, stage, command, breakdown)
    print(section)
    update_benchmarks_md(section)


if __name__ == "__main__":
    main()
