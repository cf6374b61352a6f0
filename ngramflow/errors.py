"""Errors the command line shows as one line, without a stack trace."""

import re


class UserError(Exception):
    """A mistake in what the user asked for: bad option, missing input, occupied output (exit 2)."""


class RunFailed(Exception):
    """The run itself failed: corrupt input, too many rejects, a pipeline error (exit 1)."""


def marked_reason(err: Exception, marker: str) -> str | None:
    """The one-line reason after ``marker`` in an error, however the runner wrapped it."""
    found = re.search(re.escape(marker) + r"(.*?)(?: \[while running .*)?$", str(err), re.M)
    return found.group(1).strip() if found else None


class KernelMissing(RunFailed, ImportError):
    """The native parse kernel (native/) is not built or does not load: an import cannot run without it."""
