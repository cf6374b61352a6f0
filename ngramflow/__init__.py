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

from importlib.metadata import PackageNotFoundError, version

__all__ = ["open_dataset", "__version__"]

try:
    __version__ = version("ngramflow")
except PackageNotFoundError:  # run from a checkout that was never installed
    __version__ = "0+unknown"


def open_dataset(path):
    """Open a dataset written by ``ngramflow import`` to query it: ``count``, ``series``, ``next``, ``score``
    and ``sql``, each answered as a ``pyarrow.Table`` (see ngramflow.query.api.DatasetQueries), e.g.
    ``ngramflow.open_dataset("ds").count("a", "burnt toast").to_pandas()``.
    """
    from ngramflow.query.api import DatasetQueries  # on first use: `import ngramflow` loads no DuckDB

    return DatasetQueries(path)
