"""What the command line sets before anything loads NumPy (cli.py imports this first).

NumPy's OpenBLAS starts a thread per core that spins between calls, and nothing here multiplies
matrices: an import of 80M rows spent 0.1 s of CPU in those threads.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
