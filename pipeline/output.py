"""An output dataset directory and its life cycle.

A directory is complete exactly when ``_manifest.json`` exists: the manifest is
written last, atomically (temporary name, then rename). While a run is going,
and after a run that failed or was killed, ``_INCOMPLETE`` says so and why.
"""

import json
import os
import time

import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from pipeline.errors import UserError
from schemas import INCOMPLETE, MANIFEST

# Everything a run writes; only these are ever deleted.
OWNED = ("ngrams", "vocabulary", "rejects", "mkn", "totalcounts.parquet", "_work", MANIFEST, INCOMPLETE)


def _is_local(path: str) -> bool:
    return "://" not in path


class OutputDir:
    def __init__(self, path: str):
        self.path = path.rstrip("/") if len(path) > 1 else path

    def join(self, *parts: str) -> str:
        return FileSystems.join(self.path, *parts)

    def ngrams(self, order: int) -> str:
        return self.join("ngrams", f"order={order}")

    @property
    def work(self) -> str:
        return self.join("_work")

    def is_complete(self) -> bool:
        return FileSystems.exists(self.join(MANIFEST))

    def prepare(self, overwrite: bool, description: str, resume: bool = False) -> str | None:
        """Make the directory ready for a run; returns a note for the user, if any.

        ``resume`` continues an interrupted run from a Flink checkpoint: its
        partial output stays, because the checkpoint refers to the sinks'
        temporary files in it.
        """
        if resume:
            return self._prepare_resume(description)
        note = None
        if _is_local(self.path) and os.path.exists(self.path) and not os.path.isdir(self.path):
            raise UserError(f"output {self.path} is a file, not a directory")
        if self.is_complete():
            if not overwrite:
                raise UserError(f"output {self.path} already holds a complete dataset ({MANIFEST}); "
                                "pass --overwrite to replace it")
            note = f"replacing the dataset in {self.path}"
        elif FileSystems.exists(self.join(INCOMPLETE)):
            note = f"clearing the incomplete output of an earlier run in {self.path}"
        elif foreign := self._foreign_entries():
            raise UserError(f"output {self.path} is not empty and is not an ngramflow dataset "
                            f"(it holds {', '.join(sorted(foreign)[:3])}); choose a new directory")
        self._clear()
        if _is_local(self.path):
            os.makedirs(self.path, exist_ok=True)
        self._write(INCOMPLETE, f"ngramflow run started {time.strftime('%Y-%m-%d %H:%M:%S')}: {description}\n"
                                "This directory is not a complete dataset until _manifest.json exists.\n")
        return note

    def _prepare_resume(self, description: str) -> str:
        if self.is_complete():
            raise UserError(f"output {self.path} already holds a complete dataset; --resume-from continues "
                            "an interrupted import into its own output")
        if not FileSystems.exists(self.join(INCOMPLETE)):
            raise UserError(f"--resume-from continues an interrupted import into its output, but {self.path} "
                            f"holds none ({INCOMPLETE} is missing); pass the interrupted run's --output")
        self._write(INCOMPLETE, f"ngramflow run resumed {time.strftime('%Y-%m-%d %H:%M:%S')}: {description}\n"
                                "This directory is not a complete dataset until _manifest.json exists.\n")
        return f"resuming the interrupted import in {self.path}"

    def mark_failed(self, reason: str) -> None:
        self._write(INCOMPLETE, f"ngramflow run failed {time.strftime('%Y-%m-%d %H:%M:%S')}: {reason}\n")

    def read_records(self, folder: str) -> list:
        """The JSON records the pipeline wrote under FOLDER (one per file)."""
        records = []
        for match in FileSystems.match([self.join(folder, "*.json")])[0].metadata_list:
            with FileSystems.open(match.path) as fh:
                records.append(json.loads(fh.read()))
        return records

    def ensure_parquet(self, folder: str, schema: pa.Schema) -> None:
        """Write an empty part file where a run produced none, so readers of folder/*.parquet work."""
        if FileSystems.match([self.join(folder, "*.parquet")])[0].metadata_list:
            return
        if _is_local(self.path):
            os.makedirs(self.join(folder), exist_ok=True)
        self.write_parquet(FileSystems.join(folder, "part-00000-of-00001.parquet"), schema.empty_table())

    def write_parquet(self, name: str, table: pa.Table) -> None:
        with FileSystems.create(self.join(name)) as fh:
            pq.write_table(table, fh)

    def parquet_rows(self, folder: str) -> int:
        """Rows in folder/*.parquet, from the files' footers."""
        total = 0
        for match in FileSystems.match([self.join(folder, "*.parquet")])[0].metadata_list:
            with FileSystems.open(match.path) as fh:
                total += pq.ParquetFile(fh).metadata.num_rows
        return total

    def size_bytes(self) -> int:
        return sum(m.size_in_bytes for m in FileSystems.match([self.join("**")])[0].metadata_list)

    def write_manifest(self, manifest: dict) -> None:
        """Publish the run: manifest atomically, then drop the scratch space and the marker."""
        tmp = self.join(MANIFEST + ".tmp")
        with FileSystems.create(tmp) as fh:
            fh.write(json.dumps(manifest, indent=2, sort_keys=True).encode())
        FileSystems.rename([tmp], [self.join(MANIFEST)])
        self._delete(["_work", INCOMPLETE])

    def _foreign_entries(self) -> list[str]:
        if not _is_local(self.path) or not os.path.isdir(self.path):
            return []
        return [e for e in os.listdir(self.path) if e not in OWNED]

    def _clear(self) -> None:
        self._delete(OWNED)

    def _delete(self, names) -> None:
        paths = [self.join(n) for n in names if FileSystems.exists(self.join(n))]
        if paths:
            FileSystems.delete(paths)

    def _write(self, name: str, text: str) -> None:
        with FileSystems.create(self.join(name)) as fh:
            fh.write(text.encode())
