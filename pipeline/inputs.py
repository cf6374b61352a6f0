"""Turn the user's input arguments into the exact list of files to read.

Accepts local files, directories (searched recursively for ``*.gz``) and glob
patterns, and anything Beam's filesystems can match (gs://, s3:// with the
matching extra installed). Expansion happens before the pipeline starts, so a
missing input is reported at once and the manifest can list every file.

Nothing is passed over in silence: a path that exists is taken literally even
if its name holds glob characters (``data[1].gz``); only a path that does not
exist is expanded as a pattern. Directories are walked following symbolic
links, each directory once (a link back up the tree is not a second copy); a
directory or file that cannot be read, a broken link and a link loop are
errors. A file reached under two names (a link and its target) is read once,
and the duplicate names are reported.
"""

import errno
import fnmatch
import os
import stat
from dataclasses import dataclass, field

from ngramflow.corpus.totalcounts import is_totalcounts_file as is_totalcounts
from ngramflow.errors import UserError

_GLOB_CHARS = set("*?[")


@dataclass
class InputFiles:
    """What the inputs expand to: files to read, each once, and what was noticed on the way."""

    ngram_files: list[tuple[str, int]]  # (path, size), sorted
    totalcounts: list[tuple[str, int]]
    #: Names under which an already-listed file was reached again: (name, the path read instead).
    duplicates: list[tuple[str, str]] = field(default_factory=list)


def _is_wanted(name: str) -> bool:
    return (name.endswith(".gz") or is_totalcounts(name)) and not name.startswith(".")


def _stat(path: str) -> os.stat_result:
    """``os.stat`` (following links) with the reason a path cannot be used as one line."""
    try:
        return os.stat(path)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise UserError(f"cannot read input {path}: symbolic link loop") from None
        if err.errno == errno.ENOENT and os.path.islink(path):
            raise UserError(f"cannot read input {path}: broken symbolic link to {os.readlink(path)}") from None
        if err.errno == errno.ENOENT:
            raise UserError(f"input not found: {path}") from None
        raise UserError(f"cannot read input {path}: {err.strerror.lower()}") from None


def _scandir(path: str) -> list[os.DirEntry]:
    try:
        with os.scandir(path) as entries:
            return sorted(entries, key=lambda e: e.name)
    except OSError as err:
        raise UserError(f"cannot read input directory {path}: {err.strerror.lower()}") from None


def _first_visit(folder: str, seen_dirs: set) -> bool:
    """Whether FOLDER (by device and inode) is seen for the first time; a link back to it is not a second copy."""
    info = _stat(folder)
    key = (info.st_dev, info.st_ino)
    if key in seen_dirs:
        return False
    seen_dirs.add(key)
    return True


def _walk(top: str, seen_dirs: set) -> list[str]:
    """Every file below ``top``, following links; each directory listed once."""
    if not _first_visit(top, seen_dirs):
        return []
    files = []
    for entry in _scandir(top):
        kind = _stat(entry.path).st_mode
        if stat.S_ISDIR(kind):
            files += _walk(entry.path, seen_dirs)
        elif stat.S_ISREG(kind):
            files.append(entry.path)
    return files


def _glob(pattern: str) -> list[str]:
    """The files matching a glob pattern (``*``, ``?``, ``[...]``, ``**`` for any depth of folders).

    Unlike ``glob.glob``, a folder it cannot read is an error rather than no match.
    """
    parts = pattern.split(os.sep)
    start = 0
    while start < len(parts) and not any(c in _GLOB_CHARS for c in parts[start]):
        start += 1
    base = os.sep.join(parts[:start]) or ("." if not pattern.startswith(os.sep) else os.sep)
    if not os.path.isdir(base):
        return []
    return sorted(_match(base, parts[start:], set()))


def _match(folder: str, parts: list[str], seen_dirs: set) -> list[str]:
    head, rest = parts[0], parts[1:]
    if head == "**":
        if not _first_visit(folder, seen_dirs):
            return []
        found = _match(folder, rest, set()) if rest else []
        for entry in _scandir(folder):
            if not entry.name.startswith(".") and stat.S_ISDIR(_stat(entry.path).st_mode):
                found += _match(entry.path, parts, seen_dirs)
        return found
    found = []
    for entry in _scandir(folder):
        if entry.name.startswith(".") and not head.startswith("."):
            continue
        if not fnmatch.fnmatchcase(entry.name, head):
            continue
        mode = _stat(entry.path).st_mode
        if rest and stat.S_ISDIR(mode):
            found += _match(entry.path, rest, set())
        elif not rest and stat.S_ISREG(mode):
            found.append(entry.path)
    return found


def _local(spec: str) -> list[str]:
    if os.path.lexists(spec):
        mode = _stat(spec).st_mode
        if stat.S_ISDIR(mode):
            paths = [p for p in _walk(spec, set()) if _is_wanted(os.path.basename(p))]
            if not paths:
                raise UserError(f"no .gz files under directory {spec}")
            return paths
        if not stat.S_ISREG(mode):
            raise UserError(f"cannot read input {spec}: not a regular file")
        return [spec]
    if any(c in _GLOB_CHARS for c in spec):
        paths = _glob(spec)
        if not paths:
            raise UserError(f"no files match {spec}")
        return paths
    raise UserError(f"input not found: {spec}")


def _readable(path: str) -> None:
    try:
        with open(path, "rb"):
            pass
    except OSError as err:
        raise UserError(f"cannot read input {path}: {err.strerror.lower()}") from None


def _remote(spec: str) -> list[tuple[str, int]]:
    # Beam's file systems, loaded only for remote inputs: a local import lists its files before Beam is loaded
    # (transforms/head_start.py).
    from apache_beam.io.filesystems import FileSystems

    pattern = spec + "**.gz" if spec.endswith("/") else spec
    try:
        matched = FileSystems.match([pattern])[0].metadata_list
    except Exception as err:  # each filesystem raises its own types; all mean "cannot list"
        raise UserError(f"cannot list input {spec}: {err}") from None
    if not matched:
        raise UserError(f"no files match {spec}")
    return sorted((m.path, m.size_in_bytes) for m in matched)


def expand_inputs(specs: list[str]) -> InputFiles:
    """The files to read, each once. Google's per-year totals files are recognised by name and kept apart."""
    found: dict[str, int] = {}
    identity: dict[tuple, str] = {}  # (device, inode) -> the path listed for that file
    duplicates = []
    for spec in specs:
        if "://" in spec:
            found.update(_remote(spec))
            continue
        for path in _local(spec):
            path = os.path.abspath(path)
            info = _stat(path)
            key = (info.st_dev, info.st_ino)
            if key in identity:
                if identity[key] != path:
                    duplicates.append((path, identity[key]))
                continue
            _readable(path)
            identity[key] = path
            found[path] = info.st_size
    ngram_files = sorted((p, s) for p, s in found.items() if not is_totalcounts(p))
    totalcounts = sorted((p, s) for p, s in found.items() if is_totalcounts(p))
    if not ngram_files:
        raise UserError("no n-gram files among the inputs")
    return InputFiles(ngram_files, totalcounts, sorted(duplicates))
