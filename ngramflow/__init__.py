"""ngramflow: the Google Books Ngram corpus as clean, queryable Parquet datasets.

The command line is ``ngramflow`` (``ngramflow.cli``). The subsystems are
subpackages, each a top-level folder of the repository:

- ``ngramflow.pipeline``: the jobs (import, MKN) and their runners (embedded, Flink);
- ``ngramflow.transforms``: the Beam transforms the jobs are made of;
- ``ngramflow.schemas``: the dataset's columns, layout and manifest;
- ``ngramflow.query``: reading a dataset (never imports Beam);
- ``ngramflow.corpus``: the corpus catalog, downloads and generated corpora.

The Python API is ``open_dataset``: its answers are Arrow tables, the same the
``ngramflow query`` command prints. ``import ngramflow`` stays light: it loads
neither Beam nor DuckDB.
"""

__all__ = ["open_dataset", "__version__"]


def __getattr__(name: str):
    """``__version__``, read from the installed distribution when it is first asked for: importlib.metadata
    takes 0.02 s to load, which every command's start waited for (an import's head start among them)."""
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("ngramflow")
    except PackageNotFoundError:  # run from a checkout that was never installed
        found = "0+unknown"
    globals()["__version__"] = found
    return found


def open_dataset(path):
    """Open a dataset written by ``ngramflow import`` to query it: ``count``, ``series``, ``next``, ``score``
    and ``sql``, each answered as a ``pyarrow.Table`` (see ngramflow.query.api.DatasetQueries), e.g.
    ``ngramflow.open_dataset("ds").count("a", "burnt toast").to_pandas()``.
    """
    from ngramflow.query.api import DatasetQueries  # on first use: `import ngramflow` loads no DuckDB

    return DatasetQueries(path)
