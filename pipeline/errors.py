"""Errors the command line shows as one line, without a stack trace."""


class UserError(Exception):
    """A mistake in what the user asked for: bad option, missing input, occupied output (exit 2)."""


class RunFailed(Exception):
    """The run itself failed: corrupt input, too many rejects, a pipeline error (exit 1)."""
