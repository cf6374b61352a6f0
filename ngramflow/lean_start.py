"""What the command line sets before anything loads NumPy or Beam (cli.py imports this first; its console
entry calls ``keep_unused_out``).

NumPy's OpenBLAS starts a thread per core that spins between calls, and nothing here multiplies
matrices: an import of 80M rows spent 0.1 s of CPU in those threads.
"""

import importlib.abc
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
UNUSED = ("pandas", "pymongo", "bson")


class _Absent(importlib.abc.MetaPathFinder):
    """Finds the UNUSED packages nowhere: importing one fails as it would where it is not installed."""

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in UNUSED:
            raise ModuleNotFoundError(f"{name} is kept out of the ngramflow command", name=name)
        return None


def keep_unused_out() -> None:
    """Make the command's process one without the UNUSED packages. The Python API (ngramflow.open_dataset) is
    unaffected: only the console command calls this."""
    if not any(name in sys.modules for name in UNUSED):
        sys.meta_path.insert(0, _Absent())
        # Beam warns, on its import, that its MongoDB connector is unavailable: as intended here.
        logging.getLogger("apache_beam.io.mongodbio").setLevel(logging.ERROR)
