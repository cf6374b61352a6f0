"""What the command line sets before anything loads NumPy or Beam (cli.py imports this first; its console
entry calls ``keep_unused_out``), and how it loads Beam (``loading_for_good``).

NumPy's OpenBLAS starts a thread per core that spins between calls, and nothing here multiplies
matrices: an import of 80M rows spent 0.1 s of CPU in those threads.
"""

import contextlib
import gc
import importlib.util
import logging
import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


#: Packages the command never uses that Beam imports on its own import, each only to offer something the command
#: does not ask of it; Beam does without each when it is missing:
#: - pandas: Beam (its type hints) and pyarrow (the first time an array is made from NumPy) import it only to
#:   recognise pandas objects, which the command never hands them. Loading it was 0.3 s of the command's start,
#:   a quarter of it.
#: - pymongo and bson: for Beam's MongoDB connector (apache_beam.io.mongodbio), which its io package imports
#:   whole: 30 ms of every start.
#: - apache_beam.io.gcp.bigquery: Beam's io package offers its BigQuery, Pub/Sub and GCS connectors when the first
#:   imports, and skips all three when it does not (the command reads and writes files through Beam's own file
#:   systems, which load their GCS one apart): the BigQuery module and the regex package it loads were 15-17 ms of
#:   every start (python -X importtime).
UNUSED = ("pandas", "pymongo", "bson", "apache_beam.io.gcp.bigquery")


#: Packages Beam imports on its own import, and uses only inside functions the command never calls: each is
#: loaded at its first use instead (importlib.util.LazyLoader), so never here. Beam's import took 0.25 s with them
#: loaded, 0.20 s without (medians of 8 runs each, in turn; the collector paused in both):
#: - httplib2, and pyparsing with it: for Beam's stager to fetch packages from URLs (apache_beam.internal.
#:   http_client);
#: - requests: for Beam to ask a Google Compute Engine machine its metadata (apache_beam.io.gcp.gce_metadata_util);
#: - hdfs: for Beam's Hadoop file system, made only for hdfs:// paths;
#: - zstandard: for Beam's zstd-compressed files (the command reads gzip with isal, and Arrow writes zstd);
#: - yaml: for Beam's managed transforms (apache_beam.transforms.managed), and for the Flink runner's
#:   configuration files (pipeline/flink), read only when a Flink cluster is started: 10-11 ms of every start.
LAZY = ("httplib2", "requests", "hdfs", "zstandard", "yaml")


# The finders below are meta path finders by their find_spec alone: importlib.abc, their base class, loads
# importlib.resources and typing, 0.01 s of the start before the head start is forked.


class _Absent:
    """Finds the UNUSED packages and modules nowhere, nor what they hold: importing one fails as it would where it
    is not installed."""

    #: What the UNUSED packages and modules hold: asked of every import of the process, made once.
    INSIDE = tuple(unused + "." for unused in UNUSED)

    def find_spec(self, name, path=None, target=None):
        if name in UNUSED or name.startswith(self.INSIDE):
            raise ModuleNotFoundError(f"{name} is kept out of the ngramflow command", name=name)
        return None


class _Lazy:
    """Finds the LAZY packages where the other finders do, with a loader that runs one at its first use."""

    def find_spec(self, name, path=None, target=None):
        if name not in LAZY:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            found = finder.find_spec(name, path, target)
            if found is not None and found.loader is not None:
                found.loader = importlib.util.LazyLoader(found.loader)
                return found
        return None


def keep_unused_out() -> None:
    """Make the command's process one without the UNUSED packages, and with the LAZY ones loaded at their first
    use. The Python API (ngramflow.open_dataset) is unaffected: only the console command calls this."""
    if not any(name in sys.modules for name in UNUSED):
        sys.meta_path.insert(0, _Absent())
        # Beam warns, on its import, that its MongoDB connector is unavailable: as intended here.
        logging.getLogger("apache_beam.io.mongodbio").setLevel(logging.ERROR)
    if not any(name in sys.modules for name in LAZY):
        sys.meta_path.insert(0, _Lazy())


@contextlib.contextmanager
def loading_for_good():
    """A block that loads modules the process keeps to its end (Beam): Python's cyclic garbage collector off while
    it runs, and what it made frozen after it (gc.freeze: left out of the collector's later passes, none of it
    garbage). Beam's import makes objects by the hundred thousand: the collector's passes over them were 0.06 s of
    the import's 0.45 s (133 passes), and a full pass once it was on again 0.03 s more, on the thread that holds up
    the run's start."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()
