"""What a query accepts: the ranges of its numbers and the SQL it runs.

The Python API checks these; the command line declares its options with them.
Kept apart from the API so that building the command line does not load DuckDB.
"""

from dataclasses import dataclass

from ngramflow.errors import UserError
from ngramflow.schemas import YEAR_MAX, YEAR_MIN


@dataclass(frozen=True)
class WholeNumbers:
    """The whole numbers from ``low`` to ``high``, and what the number means (for the one-line error)."""

    low: int
    high: int
    meaning: str

    def holds(self, value) -> bool:
        return type(value) is int and self.low <= value <= self.high  # not a bool, though bool is an int

    def mistake(self, got) -> str:
        return f"{self.meaning}, a whole number from {self.low} to {self.high:,}; got {got!r}"

    def check(self, name: str, value) -> int:
        if not self.holds(value):
            raise UserError(f"{name}: {self.mistake(value)}")
        return value


#: Continuations ``next`` returns: far more than a prefix has in practice, and a number DuckDB's LIMIT takes
#: (it overflows past 2**63).
TOP = WholeNumbers(1, 1_000_000_000, "how many continuations to show")
DEFAULT_TOP = 10
#: ``series`` smoothing: a window wider than the years a dataset can hold changes nothing.
SMOOTH = WholeNumbers(0, YEAR_MAX - YEAR_MIN, "the years on each side")
#: The SQL that ``sql`` runs: what DuckDB parses as a SELECT statement.
READ_STATEMENTS = "SELECT, WITH, VALUES, DESCRIBE, SHOW, SUMMARIZE, PIVOT ... IN (...)"
