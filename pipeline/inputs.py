"""Turn the user's input arguments into the exact list of files to read.

Accepts local files, directories (searched recursively for ``*.gz``) and glob
patterns, and anything Beam's filesystems can match (gs://, s3:// with the
matching extra installed). Expansion happens before the pipeline starts, so a
missing input is reported at once and the manifest can list every file.
"""

import glob
import os

from apache_beam.io.filesystems import FileSystems

from corpus.totalcounts import is_totalcounts_file as is_totalcounts
from pipeline.errors import UserError

_GLOB_CHARS = set("*?[")


def _local(spec: str) -> list[tuple[str, int]]:
    if any(c in _GLOB_CHARS for c in spec):
        paths = sorted(p for p in glob.glob(spec, recursive=True) if os.path.isfile(p))
        if not paths:
            raise UserError(f"no files match {spec}")
    elif os.path.isdir(spec):
        paths = sorted(
            os.path.join(root, name)
            for root, dirs, names in os.walk(spec)
            for name in names
            if (name.endswith(".gz") or is_totalcounts(name)) and not name.startswith(".")
        )
        if not paths:
            raise UserError(f"no .gz files under directory {spec}")
    elif os.path.exists(spec):
        paths = [spec]
    else:
        raise UserError(f"input not found: {spec}")
    files = []
    for path in paths:
        if not os.access(path, os.R_OK):
            raise UserError(f"cannot read input {path}: permission denied")
        files.append((os.path.abspath(path), os.path.getsize(path)))
    return files


def _remote(spec: str) -> list[tuple[str, int]]:
    pattern = spec + "**.gz" if spec.endswith("/") else spec
    try:
        matched = FileSystems.match([pattern])[0].metadata_list
    except Exception as err:  # each filesystem raises its own types; all mean "cannot list"
        raise UserError(f"cannot list input {spec}: {err}") from None
    if not matched:
        raise UserError(f"no files match {spec}")
    return sorted((m.path, m.size_in_bytes) for m in matched)


def expand_inputs(specs: list[str]) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """(n-gram files, totalcounts files), each as sorted unique (path, size) pairs.

    Google's per-year totals files are recognised by name and kept apart.
    """
    found = {}
    for spec in specs:
        for path, size in (_remote(spec) if "://" in spec else _local(spec)):
            found[path] = size
    ngram_files = sorted((p, s) for p, s in found.items() if not is_totalcounts(p))
    totalcounts = sorted((p, s) for p, s in found.items() if is_totalcounts(p))
    if not ngram_files:
        raise UserError("no n-gram files among the inputs")
    return ngram_files, totalcounts
