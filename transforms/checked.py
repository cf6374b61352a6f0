"""Sums of counts that fail instead of wrapping around.

Every count a dataset stores is an int64 (schemas), and NumPy's and Arrow's
integer sums wrap silently past 2**63 - 1: two rows of 5e18 would come out
negative. A sum that does not fit is an input the dataset cannot represent,
so it fails the run with a message that says which count of what overflowed.
"""

import numpy as np

INT64_MAX = int(np.iinfo(np.int64).max)
# A wrapped int64 sum is off by a multiple of 2**64; a float64 sum of fewer
# than 2**31 non-negative terms is off by less than 2**-22 of the sum. Any
# difference above 2**63 is therefore a wrap, and nothing below it is.
_WRAPPED = 2.0**63


class CountOverflow(ArithmeticError):
    """A sum of counts does not fit int64.

    The message starts with InputFileError's marker (transforms/read.py): like a
    corrupt file, it is an input that cannot be imported, and the command line
    shows it as one line and marks the output incomplete.
    """

    MARKER = "ngramflow input error: "

    def __init__(self, reason: str):
        # Beam re-raises a failed step's exception as type(err)(its message + where), so mark only once.
        super().__init__(reason if reason.startswith(self.MARKER) else self.MARKER + reason)


def too_large(what: str) -> str:
    """The reason for a sum that does not fit; ``what`` names the count and whose it is."""
    return f"{what} sums to more than {INT64_MAX}, the largest count a dataset holds (int64)"


def sum_runs(values: np.ndarray, starts: np.ndarray, what) -> np.ndarray:
    """``np.add.reduceat(values, starts)`` of non-negative int64 counts, or CountOverflow.

    ``what(run)`` names the count of the first run whose sum does not fit.
    """
    sums = np.add.reduceat(values, starts)
    if len(values) and values.max() <= INT64_MAX // len(values):
        return sums  # no sum of these values can reach past the maximum: the usual case, one cheap pass
    wrapped = np.flatnonzero(np.add.reduceat(values.astype(np.float64), starts) - sums > _WRAPPED)
    if len(wrapped):
        raise CountOverflow(too_large(what(int(wrapped[0]))))
    return sums


def fits(total: int, what: str) -> int:
    """An exact (Python) total, or CountOverflow when an int64 cannot hold it."""
    if total > INT64_MAX:
        raise CountOverflow(too_large(what))
    return total
