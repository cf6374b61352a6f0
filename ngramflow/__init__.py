"""ngramflow: the Google Books Ngram corpus as clean, queryable Parquet datasets.

The command line is ``ngramflow`` (``ngramflow.cli``). The subsystems are
subpackages, each a top-level folder of the repository:

- ``ngramflow.pipeline``: the jobs (import, MKN) and their runners (embedded, Flink);
- ``ngramflow.transforms``: the Beam transforms the jobs are made of;
- ``ngramflow.schemas``: the dataset's columns, layout and manifest;
- ``ngramflow.query``: reading a dataset (never imports Beam);
- ``ngramflow.corpus``: the corpus catalog, downloads and generated corpora.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("ngramflow")
except PackageNotFoundError:  # run from a checkout that was never installed
    __version__ = "0+unknown"
