"""One error and exit-code story: every error class streamwatch raises on purpose is a
StreamwatchError, and one place maps an escaping error to a one-line message and its code."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from streamwatch.analysis.discover import DiscoveryError
from streamwatch.analysis.probe import ProbeError
from streamwatch.analysis.triggers import TriggerError
from streamwatch.analysis.watch import WatchError
from streamwatch.backends.base import Control, NotSupported
from streamwatch.checkpoint.fs import StorageError
from streamwatch.checkpoint.reader import CheckpointError
from streamwatch.cli import Streamwatch
from streamwatch.errors import ExitCode, StreamwatchError, exit_code_for, one_line
from streamwatch.events.codecs import UnsupportedCodec
from streamwatch.events.reader import EventSourceError
from streamwatch.tui.commands import CommandError


@pytest.mark.parametrize("error,code", [
    (CheckpointError("no such checkpoint"), ExitCode.UNREADABLE),
    (StorageError("permission denied"), ExitCode.UNREADABLE),
    (EventSourceError("not an event log"), ExitCode.UNREADABLE),
    (UnsupportedCodec("snappy"), ExitCode.UNREADABLE),
    (TriggerError("unknown trigger"), ExitCode.USAGE),
    (NotSupported(Control.LAND), ExitCode.USAGE),
    (WatchError("no checkpoint under PATH"), ExitCode.UNREADABLE),
    (DiscoveryError("PATH is missing"), ExitCode.UNREADABLE),
    (ProbeError("unknown protocol"), ExitCode.UNREADABLE),
    (CommandError("unknown command"), ExitCode.USAGE),
])
def test_every_error_is_a_streamwatch_error_with_its_code(error, code):
    assert isinstance(error, StreamwatchError)
    assert exit_code_for(error) == code


def test_an_os_error_is_unreadable_and_anything_else_is_an_error():
    assert exit_code_for(OSError("disk")) == ExitCode.UNREADABLE
    assert exit_code_for(RuntimeError("bug")) == ExitCode.ERRORS


def test_one_line():
    assert one_line(RuntimeError("first\nsecond")) == "first"
    assert one_line(KeyError()) == "KeyError"
    assert one_line("  \n") == ""


def test_an_escaping_error_becomes_one_stderr_line_and_its_exit_code():
    @click.group(cls=Streamwatch)
    def main() -> None:
        pass

    @main.command()
    def inspect() -> None:
        raise CheckpointError("/nowhere: no such checkpoint folder\n(details)")

    result = CliRunner().invoke(main, ["inspect"])
    assert result.exit_code == ExitCode.UNREADABLE
    assert result.stderr == "streamwatch inspect: /nowhere: no such checkpoint folder\n"
