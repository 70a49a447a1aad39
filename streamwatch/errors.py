"""streamwatch's errors and exit codes — one story for every subcommand.

Every error streamwatch raises on purpose derives from :class:`StreamwatchError` and names the
:class:`ExitCode` a command exits with when it escapes; :func:`exit_code_for` is the one
mapping (with the few per-subcommand codes the README documents). No imports: every layer
may use this module.
"""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    """Exit statuses of every ``streamwatch`` subcommand."""

    OK = 0
    WARNINGS = 1  # findings of severity warning; a query failed
    USAGE = 2  # bad option or argument (click's own status too)
    ERRORS = 3  # findings of severity error; Spark refused or could not start
    UNREADABLE = 4  # input unreadable; output cannot be written


class StreamwatchError(Exception):
    """Base of streamwatch's own errors. The message is one line meant for the user;
    ``exit_code`` is the status a command exits with when the error escapes it."""

    exit_code: ExitCode = ExitCode.ERRORS


#: (subcommand, error class name) → exit code, where the README documents another code than
#: the class's own (``streamwatch events``: 1 for an unreadable or unrecognised input)
DOCUMENTED: dict[tuple[str, str], ExitCode] = {
    ("events", "EventSourceError"): ExitCode.WARNINGS,
    ("events", "UnsupportedCodec"): ExitCode.WARNINGS,
    ("replay", "EventSourceError"): ExitCode.WARNINGS,
}


def exit_code_for(error: BaseException, command: str = "") -> ExitCode:
    """The exit code of ``command`` (a subcommand name) when ``error`` escapes it."""
    for cls in type(error).__mro__:
        code = DOCUMENTED.get((command, cls.__name__))
        if code is not None:
            return code
    if isinstance(error, StreamwatchError):
        return error.exit_code
    if isinstance(error, OSError):
        return ExitCode.UNREADABLE
    return ExitCode.ERRORS


def one_line(error: BaseException | str | None, limit: int = 200) -> str:
    """The first non-empty line of an error (or text), at most ``limit`` characters; the
    exception's class name when it has no message."""
    text = str(error or "").strip()
    line = text.splitlines()[0] if text else ""
    if not line and isinstance(error, BaseException):
        line = type(error).__name__
    return line[:limit]
