"""What the command line sets before anything loads NumPy or Beam (cli.py imports this first; its console
entry calls ``keep_pandas_out``).

NumPy's OpenBLAS starts a thread per core that spins between calls, and nothing here multiplies
matrices: an import of 80M rows spent 0.1 s of CPU in those threads.
"""

import importlib.abc
import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


class _NoPandas(importlib.abc.MetaPathFinder):
    """Finds pandas nowhere: ``import pandas`` fails as it would where pandas is not installed."""

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] == "pandas":
            raise ModuleNotFoundError("pandas is kept out of the ngramflow command", name=name)
        return None


def keep_pandas_out() -> None:
    """Make the command's process one without pandas. Beam (its type hints) and pyarrow (the first time an
    array is made from NumPy) import pandas only to recognise pandas objects, which the command never hands
    them, and both do without it when it is missing. Loading it was 0.3 s of the command's start, a quarter
    of it. The Python API (ngramflow.open_dataset) is unaffected: only the console command calls this."""
    if "pandas" not in sys.modules:
        sys.meta_path.insert(0, _NoPandas())
