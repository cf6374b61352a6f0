"""The programs ngramflow is measured against, each runnable alone:

    python -m benchmarks.peers KIND OUTPUT FILE...

KIND is one of duckdb-2012, duckdb-2020 (DuckDB, 2 threads, at most half the
machine's memory, spilling beyond it; totals per n-gram written to Parquet),
gzip, isal (decompression alone), python-dict (a plain Python dictionary
aggregation of 2012 rows, the naive script).
"""

import gzip
import os
import sys

from isal import igzip

_BLOCK = 8 << 20


def _listing(files):
    return "[" + ", ".join(f"'{f}'" for f in files) + "]"


def _duckdb(output: str):
    # Imported here, by the DuckDB peers alone: its import (0.17-0.23 s) was charged to isal's decompression too,
    # which every ratio to isal divides by.
    import duckdb

    con = duckdb.connect()
    con.sql("SET threads = 2")
    # DuckDB's default limit is 80% of the machine's memory, whoever else uses it: with other jobs on
    # the machine the kernel killed it at 20.8 GB of 24 (the 1.43-billion-row corpus). Half, and its
    # temporary files where the output goes, let it spill instead.
    con.sql(f"SET memory_limit = '{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') // 2 >> 20}MB'")
    con.sql(f"SET temp_directory = '{os.path.abspath(output)}.tmp'")
    return con


def duckdb_2012(output, files):
    con = _duckdb(output)
    con.sql(f"""COPY (
        SELECT ngram, sum(match) AS match_count, sum(volume) AS volume_count, min(year) AS first_year,
               max(year) AS last_year, count(DISTINCT year) AS years
        FROM read_csv({_listing(files)}, delim='\t', quote='', escape='', header=false,
                      columns={{'ngram': 'VARCHAR', 'year': 'INTEGER', 'match': 'BIGINT', 'volume': 'BIGINT'}})
        GROUP BY ngram) TO '{output}' (FORMAT parquet)""")


def duckdb_2020(output, files):
    con = _duckdb(output)
    con.sql(f"""COPY (
        WITH lines AS (
            SELECT string_split(line, '\t') AS f
            FROM read_csv({_listing(files)}, delim='\x1f', quote='', escape='', header=false,
                          columns={{'line': 'VARCHAR'}})),
        tuples AS (SELECT f[1] AS ngram, string_split(unnest(f[2:]), ',') AS t FROM lines)
        SELECT ngram, sum(t[2]::BIGINT) AS match_count, sum(t[3]::BIGINT) AS volume_count,
               min(t[1]::INTEGER) AS first_year, max(t[1]::INTEGER) AS last_year,
               count(DISTINCT t[1]) AS years
        FROM tuples GROUP BY ngram) TO '{output}' (FORMAT parquet)""")


def _drain(opener, files):
    total = 0
    for path in files:
        with opener(path, "rb") as fh:
            while block := fh.read(_BLOCK):
                total += len(block)
    print(total)


def python_dict(output, files):
    totals = {}
    for path in files:
        with igzip.open(path, "rt", encoding="utf-8") as fh:
            for line in fh:
                ngram, year, match, volume = line.rstrip("\n").split("\t")
                t = totals.get(ngram)
                if t is None:
                    totals[ngram] = [int(match), int(volume), int(year), int(year), 1]
                else:
                    t[0] += int(match)
                    t[1] += int(volume)
                    t[2] = min(t[2], int(year))
                    t[3] = max(t[3], int(year))
                    t[4] += 1
    print(len(totals))


KINDS = {
    "duckdb-2012": duckdb_2012,
    "duckdb-2020": duckdb_2020,
    "gzip": lambda output, files: _drain(gzip.open, files),
    "isal": lambda output, files: _drain(igzip.open, files),
    "python-dict": python_dict,
}

if __name__ == "__main__":
    KINDS[sys.argv[1]](sys.argv[2], sys.argv[3:])
