"""One large file through each way of doing the per-chunk work, one thread each, side by side:

    python -m benchmarks.chunk_paths FILE [--python OTHER_PYTHON]

Contenders, each its own process (wall, CPU, peak RSS): isal decompression into
chunks alone (the floor); the native kernel (transforms/kernel.py) on those
chunks, POS-tagged n-grams kept as DuckDB keeps them; DuckDB, one thread, as the
embedded engine per work unit (read_csv of the file, GROUP BY n-gram: sums,
first and last year, distinct years); and, with --python naming the interpreter
of a tree from before the kernel (e.g. main's .venv/bin/python), that tree's
Arrow path (parse_fast + collapse) with the same policy.
"""

import argparse
import os
import sys


def _chunks(path):
    from ngramflow.transforms.lines import LineReader

    reader = LineReader(path, None)
    try:
        yield from ((reader.format, *piece) for piece in reader.lines_before(None))
    finally:
        reader.close()


def decompress(path):
    return sum(lines for _fmt, _first, lines, _chunk in _chunks(path))


def kernel(path):
    from ngramflow.transforms.kernel import collapse_chunk
    from ngramflow.transforms.policy import RowPolicy

    runs = 0
    for fmt, first, _lines, chunk in _chunks(path):
        runs += collapse_chunk(chunk, fmt, path, first, RowPolicy(pos="keep"), False).runs.num_rows
    return runs


def arrow_path(path):
    from ngramflow.transforms.collapse import collapse
    from ngramflow.transforms.parse import parse_chunk
    from ngramflow.transforms.policy import RowPolicy

    runs = 0
    for fmt, first, lines, chunk in _chunks(path):
        table, starts, _ = parse_chunk(chunk, lines, fmt, path, first)
        runs += collapse(table, starts, RowPolicy(pos="keep"), False)[0].num_rows
    return runs


def duckdb_2012(path):
    import duckdb

    con = duckdb.connect()
    con.sql("SET threads = 1")
    return con.execute(f"""SELECT count(*) FROM (
        SELECT ngram, sum(match), sum(volume), min(year), max(year), count(DISTINCT year)
        FROM read_csv('{path}', delim='\t', quote='', escape='', header=false,
                      columns={{'ngram': 'VARCHAR', 'year': 'INTEGER', 'match': 'BIGINT', 'volume': 'BIGINT'}})
        GROUP BY ngram)""").fetchone()[0]


CONTENDERS = {"decompress": decompress, "kernel": kernel, "arrow-path": arrow_path, "duckdb-1-thread": duckdb_2012}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file")
    parser.add_argument("--python", help="interpreter of a tree from before the kernel, for its Arrow path")
    parser.add_argument("--one", choices=CONTENDERS, help=argparse.SUPPRESS)  # a contender, in this process
    args = parser.parse_args(argv)
    if args.one:
        print(CONTENDERS[args.one](args.file))
        return
    from benchmarks.measure import run  # in the measuring process only: a contender's may not have it

    print("| contender | wall s | CPU s | peak RSS MiB | output rows |\n| --- | ---: | ---: | ---: | ---: |")
    for name in CONTENDERS:
        python = args.python if name == "arrow-path" else sys.executable
        if python is None:
            continue
        # By path: each interpreter imports ngramflow from its own tree.
        m = run([python, os.path.abspath(__file__), args.file, "--one", name])
        if m.returncode:
            raise SystemExit(f"{name} failed:\n{m.output[-2000:]}")
        rows = m.output.split()[-1]
        print(f"| {name} | {m.wall_seconds:.2f} | {m.cpu_seconds:.2f} | {m.peak_rss_bytes / 2**20:,.0f} | {rows} |",
              flush=True)


if __name__ == "__main__":
    main()
