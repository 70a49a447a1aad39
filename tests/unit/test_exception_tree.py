"""One exception tree, one exit path: every exception class defined anywhere in the
``streamwatch`` package (every module imported, pyspark's and textual's too) derives from
:class:`~streamwatch.errors.StreamwatchError` and names an exit code of :class:`ExitCode`; an
error a subcommand raises is printed whole, on one stderr line, by the command group alone; and
every subcommand's ``--help`` lists its exit codes, one line a code."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import click
import pytest
from click.testing import CliRunner

import streamwatch
from streamwatch.cli import COMMANDS, Streamwatch, main
from streamwatch.errors import ExitCode, StreamwatchError, Unreadable, UsageError


def _exception_classes() -> list[type[BaseException]]:
    """Every exception class defined at module level in streamwatch, each module imported."""
    found: list[type[BaseException]] = []
    for info in pkgutil.walk_packages(streamwatch.__path__, "streamwatch."):
        module = importlib.import_module(info.name)
        found += [obj for obj in vars(module).values()
                  if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == module.__name__]
    return sorted(found, key=lambda c: f"{c.__module__}.{c.__qualname__}")


CLASSES = _exception_classes()


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def test_the_walk_finds_the_classes_named_in_the_issue():
    # the discovery itself, against class names read off the source files (grep ^class)
    names = {_name(c) for c in CLASSES}
    assert {"streamwatch.errors.StreamwatchError", "streamwatch.model.location.LocationError",
            "streamwatch.spark.kafka_broker.KafkaBrokerError", "streamwatch.spark.compat.QueryLoadError",
            "streamwatch.checkpoint.ops.recover.RecoverError", "streamwatch.checkpoint.ops.diff.BatchRangeError",
            "streamwatch.checkpoint.ops.snapshot.SnapshotError", "streamwatch.analysis.lineage.LineageError",
            "streamwatch.checkpoint.reader.CheckpointError"} <= names
    assert len(CLASSES) >= 30


@pytest.mark.parametrize("cls", CLASSES, ids=_name)
def test_every_exception_is_a_streamwatch_error_with_a_documented_exit_code(cls):
    assert issubclass(cls, StreamwatchError), f"{_name(cls)} bases: {[b.__name__ for b in cls.__mro__[1:]]}"
    code = cls.exit_code
    assert isinstance(code, ExitCode) and code is not ExitCode.OK, (_name(cls), code)


@pytest.mark.parametrize("cls,second", [
    ("streamwatch.model.location.LocationError", ValueError),
    ("streamwatch.spark.kafka_broker.KafkaBrokerError", RuntimeError),
    ("streamwatch.checkpoint.ops.diff.BatchRangeError", ValueError),
    ("streamwatch.checkpoint.ops.snapshot.SnapshotError", ValueError),
])
def test_the_second_base_callers_catch_is_kept(cls, second):
    by_name = {_name(c): c for c in CLASSES}
    assert issubclass(by_name[cls], second)


def _group_with(body) -> click.Group:
    @click.group(cls=Streamwatch)
    def group() -> None:
        pass

    group.command("diff")(body)
    return group


def test_a_raised_refusal_is_one_whole_line_and_its_code():
    long_path = "/" + "/".join(["a-rather-long-folder-name"] * 20)  # 520 characters

    def refuse() -> None:
        raise Unreadable(f"{long_path}: unreadable (JSONDecodeError: unexpected character)\nsecond line")

    r = CliRunner().invoke(_group_with(refuse), ["diff"])
    assert r.exit_code == 4
    assert r.stderr == f"streamwatch diff: {long_path}: unreadable (JSONDecodeError: unexpected character)\n"
    assert r.stdout == ""

    def usage() -> None:
        raise UsageError("--to-batch needs --from-batch")

    r = CliRunner().invoke(_group_with(usage), ["diff"])
    assert (r.exit_code, r.stderr) == (2, "streamwatch diff: --to-batch needs --from-batch\n")


@pytest.mark.parametrize("command", ["compat", "diff", "inspect", "land", "recover", "retention", "watch"])
def test_the_command_keeps_no_private_exit_path(command):
    # the one place a refusal becomes a line and a status is the group's handler
    source = inspect.getsource(importlib.import_module(f"streamwatch.cli.{COMMANDS[command]}"))
    assert not re.search(r"def _?fail\(", source), f"{command} defines its own fail()"
    assert not re.search(r"click\.echo\(f?\"streamwatch \w+: .*err=True\)\n\s+sys\.exit\(", source), command


def _help_codes(command: str) -> dict[int, str]:
    """code → text of the ``Exit codes:`` lines (one a code) of ``streamwatch COMMAND --help``."""
    r = CliRunner().invoke(main, [command, "--help"], terminal_width=200)
    assert r.exit_code == 0, r.output
    assert "Exit codes:" in r.output, f"streamwatch {command} --help lists no exit codes"
    listed = re.findall(r"^\s+([0-4])\s{2,}(.+)$", r.output.split("Exit codes:")[1], re.M)
    assert len(listed) == len({k for k, _ in listed}), f"{command} --help: one line a code"
    return {int(k): v for k, v in listed}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_documents_its_exit_codes(command):
    codes = _help_codes(command)
    assert set(codes) <= {int(c) for c in ExitCode}
    # 0 and click's own 2 for a bad option hold for every command
    assert {0, 2} <= set(codes), (command, codes)
