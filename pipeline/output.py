"""An output dataset directory and its life cycle.

A directory is complete exactly when ``_manifest.json`` exists: the manifest is
written last, atomically (temporary name, then rename). While a run is going,
and after a run that failed or was killed, ``_INCOMPLETE`` says so and why.

ngramflow deletes only what it provably wrote: the files a manifest lists
(``files``), its build folder ``_build/`` (recognised by the marker written
into it first) and its own markers. Anything else in the directory is left as
it is; a directory that is not empty and holds no dataset is refused.

A run writes the new dataset into ``_build/`` and publishes it only once it is
complete: the files it replaces are deleted, the new ones moved into place and
the manifest written last. A run that fails before that leaves the previous
dataset, if any, complete and readable. Publishing first records in
``_build/_publish.json`` what it deletes and moves, so that the next run can
tidy up after a crash in the middle of it. One run at a time writes into a
directory: a run holds an exclusive lock on it (local directories).
"""

import contextlib
import errno
import fcntl
import glob
import json
import os
import shutil
import time
from pathlib import PurePath

import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from ngramflow.errors import UserError
from ngramflow.schemas.layout import BUILD, BUILD_MARKER, INCOMPLETE, JOURNAL, MANIFEST, MKN_INCOMPLETE, SPILL, WORK
from ngramflow.schemas.manifest import parse_manifest
from ngramflow.transforms.sinks import write_then_rename


def _is_local(path: str) -> bool:
    return "://" not in path


def _os_error(path: str, err: OSError) -> UserError:
    if os.path.islink(path) and not os.path.exists(path):
        try:
            os.stat(path)
        except OSError as link_err:
            err = link_err  # the link, not the folder it should have made, is what is wrong
    if err.errno == errno.ENOSPC:
        return UserError(f"no space left on the device of output {path}")
    if err.errno in (errno.ENOTDIR, errno.EEXIST):
        return UserError(f"output {path}: a part of that path is a file, not a directory")
    if err.errno == errno.ELOOP:
        return UserError(f"output {path}: symbolic link loop")
    if err.errno == errno.ENOENT:
        return UserError(f"output {path}: broken symbolic link to {os.readlink(path)}")
    return UserError(f"cannot write to output {path}: {(err.strerror or str(err)).lower()}")


def _is_ngramflow_marker(path: str) -> bool:
    """Whether a marker file is one this tool wrote (its first line names ngramflow)."""
    try:
        with FileSystems.open(path) as fh:
            return b"ngramflow" in fh.read(4096).split(b"\n", 1)[0]
    except OSError:
        return False


class OutputDir:
    """Files under one folder (a dataset or its build folder), read and written through Beam's filesystems."""

    def __init__(self, path: str):
        self.path = path.rstrip("/") if len(path) > 1 else path

    def join(self, *parts: str) -> str:
        return FileSystems.join(self.path, *parts)

    def list_files(self, folder: str, suffix: str) -> list[str]:
        """The files directly in FOLDER whose names end with SUFFIX, sorted; none if it does not exist."""
        path = self.join(folder)
        if _is_local(path):
            if not os.path.isdir(path):
                return []
            return sorted(e.path for e in os.scandir(path) if e.is_file() and e.name.endswith(suffix))
        pattern = FileSystems.join(glob.escape(path), "*" + suffix)  # run[1] is a name, not a pattern
        return sorted(m.path for m in FileSystems.match([pattern])[0].metadata_list)

    def files(self) -> dict[str, int]:
        """Every file below this folder, as {path relative to it: size in bytes}."""
        if _is_local(self.path):
            return {os.path.relpath(os.path.join(root, name), self.path): os.path.getsize(os.path.join(root, name))
                    for root, _, names in os.walk(self.path) for name in names}
        start = len(self.path) + 1
        return {m.path[start:]: m.size_in_bytes
                for m in FileSystems.match([FileSystems.join(glob.escape(self.path), "**")])[0].metadata_list}

    def read_records(self, folder: str) -> list:
        """The JSON records the pipeline wrote under FOLDER (one per file)."""
        records = []
        for path in self.list_files(folder, ".json"):
            with FileSystems.open(path) as fh:
                records.append(json.loads(fh.read()))
        return records

    def ensure_parquet(self, folder: str, schema: pa.Schema) -> None:
        """Write an empty part file where a run produced none, so readers of folder/*.parquet work."""
        if self.list_files(folder, ".parquet"):
            return
        self.write_parquet(FileSystems.join(folder, "part-00000-of-00001.parquet"), schema.empty_table())

    def write_parquet(self, name: str, table: pa.Table) -> None:
        write_then_rename(self.join(name), lambda fh: pq.write_table(table, fh))

    def parquet_rows(self, folder: str) -> int:
        """Rows in folder/*.parquet, from the files' footers."""
        total = 0
        for path in self.list_files(folder, ".parquet"):
            with FileSystems.open(path) as fh:
                total += pq.ParquetFile(fh).metadata.num_rows
        return total

    def exists(self, name: str) -> bool:
        return FileSystems.exists(self.join(name))

    def write_text(self, name: str, text: str) -> None:
        with FileSystems.create(self.join(name)) as fh:
            fh.write(text.encode())

    def write_json(self, name: str, record: dict) -> None:
        """Write a JSON file atomically: temporary name, then rename."""
        write_then_rename(self.join(name), lambda fh: fh.write(json.dumps(record, indent=2, sort_keys=True).encode()))

    def delete(self, names) -> None:
        """Delete these files or folders below this one where they exist."""
        paths = [self.join(n) for n in names if self.exists(n)]
        if not _is_local(self.path):
            if paths:
                FileSystems.delete(paths)
            return
        for path in paths:  # Beam's local delete takes a path as a pattern: run[1] would miss
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.remove(path)


class DatasetDir(OutputDir):
    """The dataset directory a run writes: lock, build folder, publication, markers."""

    @property
    def build(self) -> OutputDir:
        """Where the run writes everything; published into this directory when complete."""
        return OutputDir(self.join(BUILD))

    def is_complete(self) -> bool:
        return self.exists(MANIFEST)

    def read_manifest(self) -> dict:
        with FileSystems.open(self.join(MANIFEST)) as fh:
            return parse_manifest(fh.read(), self.path)

    def write_manifest(self, manifest: dict) -> None:
        self.write_json(MANIFEST, manifest)

    @contextlib.contextmanager
    def lock(self):
        """Hold the directory for one run; another run into it fails at once (local directories only)."""
        if not _is_local(self.path):
            yield
            return
        if os.path.exists(self.path) and not os.path.isdir(self.path):
            raise UserError(f"output {self.path} is a file, not a directory")
        try:
            os.makedirs(self.path, exist_ok=True)
            fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY)
        except OSError as err:
            raise _os_error(self.path, err) from None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise UserError(f"output {self.path} is in use by another ngramflow run; wait for it to end "
                                "or choose another --output") from None
            yield
        finally:
            os.close(fd)  # releases the lock

    def prepare(self, overwrite: bool, description: str, resume: bool = False) -> str | None:
        """Make the directory ready for a run and start its build folder; returns a note for the user, if any.

        ``resume`` continues an interrupted run from a Flink checkpoint: its
        build folder stays, because the checkpoint refers to the sinks' files in it.
        """
        if resume:
            return self._prepare_resume(description)
        note = None
        self.recover()
        if self.is_complete():
            if not overwrite:
                raise UserError(f"output {self.path} already holds a complete dataset ({MANIFEST}); "
                                "pass --overwrite to replace it")
            self._listed_files()  # a dataset that cannot say what it holds cannot be replaced safely
            note = f"replacing the dataset in {self.path} once the new one is complete"
        else:
            if not self._holds_ours() and (foreign := self._entries()):
                raise UserError(f"output {self.path} is not empty and is not an ngramflow dataset "
                                f"(it holds {', '.join(sorted(foreign)[:3])}); choose a new directory")
            if self.exists(INCOMPLETE):
                note = f"clearing the incomplete output of an earlier run in {self.path}"
        self._clear_build()
        self._start(description, "started")
        return note

    def _prepare_resume(self, description: str) -> str:
        if not self.exists(INCOMPLETE) or not self._owns_build():
            raise UserError(f"--resume-from continues an interrupted import into its output, but {self.path} "
                            f"holds none ({INCOMPLETE} or {BUILD}/ is missing); pass the interrupted run's --output")
        self._start(description, "resumed")
        return f"resuming the interrupted import in {self.path}"

    def _start(self, description: str, verb: str) -> None:
        replacing = (" The complete dataset already here stays readable until the new one replaces it."
                     if self.is_complete() else "")
        try:
            self.write_text(INCOMPLETE, f"ngramflow run {verb} {time.strftime('%Y-%m-%d %H:%M:%S')}: {description}\n"
                                        f"The new dataset is built in {BUILD}/ and is not complete until "
                                        f"{MANIFEST} lists it.{replacing}\n")
            self.start_build()
        except OSError as err:
            raise _os_error(self.path, err) from None

    def start_build(self) -> OutputDir:
        """The build folder, created with the marker that proves it is ngramflow's (kept if it exists)."""
        build = self.build
        if not self._owns_build():
            if _is_local(build.path):
                os.makedirs(build.path, exist_ok=True)
            build.write_text(BUILD_MARKER, f"ngramflow build folder of {self.path}\n")
        return build

    def restart_build(self) -> OutputDir:
        """The build folder emptied, for another attempt of the same run."""
        self._clear_build()
        return self.start_build()

    def mark_failed(self, reason: str) -> None:
        """Say why the run failed; best effort, since the failure may be that nothing can be written."""
        with contextlib.suppress(OSError):
            self.write_text(INCOMPLETE, f"ngramflow run failed {time.strftime('%Y-%m-%d %H:%M:%S')}: {reason}\n")

    def publish(self, manifest: dict, replace: bool = True) -> dict:
        """Move the build folder's files into place and write the manifest, which lists them.

        ``replace``: the new files replace the whole dataset listed by the current
        manifest (an import); otherwise they are added to it (the MKN stage).
        Returns the manifest written.
        """
        build = self.build
        staged = {rel: size for rel, size in build.files().items()
                  if rel.split(os.sep)[0] not in (WORK, SPILL, BUILD_MARKER, JOURNAL)}
        old = self._listed_files() if self.is_complete() else {}
        replaced = old if replace else {}
        kept = {} if replace else old
        in_the_way = sorted(rel for rel in staged if rel not in replaced and self.exists(rel))
        if in_the_way:
            raise UserError(f"cannot publish into {self.path}: it holds {in_the_way[0]}, which ngramflow did not "
                            f"write; move it away and run again (the new dataset is kept in {build.path})")
        manifest = {**manifest, "files": dict(sorted({**kept, **staged}.items())),
                    "output_bytes": sum(kept.values()) + sum(staged.values())}
        build.write_json(JOURNAL, {"replaced": sorted(replaced), "published": sorted(staged)})
        self.write_text(INCOMPLETE, f"ngramflow is publishing the dataset built in {BUILD}/ "
                                    f"({time.strftime('%Y-%m-%d %H:%M:%S')})\n")
        if replaced:
            self.delete([MANIFEST])
            self._delete_listed(replaced)
        self._move_in(build, staged)
        self.write_manifest(manifest)
        self.delete([BUILD, INCOMPLETE] + ([MKN_INCOMPLETE] if self._owns_marker(MKN_INCOMPLETE) else []))
        return manifest

    def delete_listed(self, manifest: dict, prefix: str) -> dict:
        """Delete the listed files under PREFIX and rewrite the manifest without them; returns it."""
        listed = manifest.get("files", {})
        gone = {rel: size for rel, size in listed.items() if rel.startswith(prefix)}
        manifest = {**manifest, "files": {rel: size for rel, size in listed.items() if rel not in gone}}
        self.write_manifest(manifest)
        self._delete_listed(gone)
        return manifest

    def _move_in(self, build: OutputDir, staged: dict) -> None:
        for top in sorted({rel.split(os.sep)[0] for rel in staged}):
            if not self.exists(top):  # one rename moves a whole folder
                FileSystems.rename([build.join(top)], [self.join(top)])
                continue
            for rel in sorted(r for r in staged if r.split(os.sep)[0] == top):
                if _is_local(self.path):
                    os.makedirs(os.path.dirname(self.join(rel)), exist_ok=True)
                FileSystems.rename([build.join(rel)], [self.join(rel)])

    def _delete_listed(self, files) -> None:
        """Delete these listed files, then the folders they leave empty (never a folder holding anything)."""
        files = sorted(set(files))
        self.delete(files)
        if not _is_local(self.path):
            return
        # Every folder above a deleted file, deepest first; "." is the dataset itself, never removed.
        folders = {str(parent) for rel in files for parent in PurePath(rel).parents} - {"."}
        for folder in sorted(folders, key=lambda f: -f.count(os.sep)):
            with contextlib.suppress(OSError):  # not empty: somebody else's files are in it
                os.rmdir(self.join(folder))

    def _listed_files(self) -> dict:
        files = self.read_manifest().get("files")
        if not isinstance(files, dict):
            raise UserError(f"the dataset in {self.path} was written by an earlier ngramflow whose manifest does "
                            "not list its files, so it cannot be replaced safely; delete it yourself or choose "
                            "a new --output")
        return files

    def _owns_build(self) -> bool:
        return self.exists(FileSystems.join(BUILD, BUILD_MARKER))

    def _owns_marker(self, name: str) -> bool:
        return self.exists(name) and _is_ngramflow_marker(self.join(name))

    def _clear_build(self) -> None:
        if self._owns_build():
            self.delete([BUILD])

    def recover(self) -> None:
        """After a crash while publishing: delete what it had moved in or was replacing that no manifest lists."""
        if not (self._owns_build() and self.build.exists(JOURNAL)):
            return
        with FileSystems.open(self.build.join(JOURNAL)) as fh:
            journal = json.loads(fh.read())
        listed = self._listed_files() if self.is_complete() else {}
        self._delete_listed([rel for rel in journal["replaced"] + journal["published"] if rel not in listed])

    def _holds_ours(self) -> bool:
        """Whether an earlier run left its marker or build folder here: then this is a dataset's directory,
        and anything else in it is the user's, to be left alone."""
        return self._owns_marker(INCOMPLETE) or self._owns_build()

    def _entries(self) -> list[str]:
        if not _is_local(self.path) or not os.path.isdir(self.path):
            return []
        return os.listdir(self.path)

