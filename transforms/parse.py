"""The careful parser: a chunk of lines into an Arrow table of year rows, naming every malformed line.

A chunk is a run of whole lines of one file. Its rows come out as a table with
ROW_SCHEMA: one row per (n-gram, year), in file order; each line that does not
parse (transforms/formats.py says why) becomes a reject (file, line, reason,
raw). It is the reference the native kernel (transforms/kernel.py) is tested
against, and the route of every chunk the kernel cannot vouch for.
"""

import pyarrow as pa

from ngramflow.schemas import RAW_LIMIT, REJECTS
from ngramflow.transforms import formats

ROW_SCHEMA = pa.schema([("ngram", pa.string()), ("year", pa.int32()), ("match", pa.int64()), ("volume", pa.int64())])


def line_by_line(chunk: bytes, fmt: str, path: str, first_line: int) -> tuple[pa.Table, pa.Table]:
    """(year rows, rejects) of ``chunk``: whole lines of ``path``, the first numbered ``first_line``."""
    parse = formats.PARSERS[fmt]
    ngrams, years, matches, volumes = [], [], [], []
    rejects = {"file": [], "line": [], "reason": [], "raw": []}
    lines = chunk.split(b"\n")
    if chunk.endswith(b"\n"):
        lines.pop()
    for number, raw in enumerate(lines, first_line):
        try:
            tokens, series = parse(formats.decode(raw))
        except formats.Malformed as bad:
            for column, value in zip(rejects, (path, number, str(bad), raw.rstrip(b"\r")[:RAW_LIMIT])):
                rejects[column].append(value)
            continue
        ngram = " ".join(tokens)
        for year, match, volume in series:
            ngrams.append(ngram)
            years.append(year)
            matches.append(match)
            volumes.append(volume)
    table = pa.table([ngrams, years, matches, volumes], schema=ROW_SCHEMA)
    return table, pa.table(rejects, schema=REJECTS)
