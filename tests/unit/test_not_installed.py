"""A command that needs an optional dependency which is not installed says, in one line, which
``pip install`` brings it (exit 3); a missing module that is not optional stays a bug (its
traceback is not hidden)."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from streamwatch.cli import Streamwatch
from streamwatch.errors import OPTIONAL_MODULES, ExitCode, NotInstalled, not_installed


@pytest.mark.parametrize("module,extra", [("pyspark", "spark"), ("s3fs", "s3"), ("adlfs", "azure"),
                                          ("gcsfs", "gcs"), ("confluent_kafka", "kafka"), ("delta", "demo")])
def test_each_optional_module_names_its_extra(module, extra):
    e = not_installed(ModuleNotFoundError(f"No module named '{module}.sub'", name=f"{module}.sub"))
    assert isinstance(e, NotInstalled) and e.exit_code is ExitCode.ERRORS
    assert f"pip install 'streamwatch[{extra}]'" in str(e) and f"'{module}'" in str(e)
    assert ("streamwatch[demo]" in str(e)) == (extra in ("spark", "demo"))
    assert OPTIONAL_MODULES[module][1] == extra


def test_a_module_that_is_not_optional_is_not_excused():
    assert not_installed(ModuleNotFoundError("No module named 'streamwatch_nope'", name="streamwatch_nope")) is None
    assert not_installed(ModuleNotFoundError("no name")) is None


def _group(missing: str) -> click.Group:
    @click.group(cls=Streamwatch)
    def group() -> None:
        pass

    @group.command("log")
    def log() -> None:
        raise ModuleNotFoundError(f"No module named '{missing}'", name=missing)

    return group


def test_the_command_line_says_what_to_install_and_exits_3():
    r = CliRunner().invoke(_group("pyspark"), ["log"])
    assert r.exit_code == 3
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("streamwatch log: ")
    assert "pip install 'streamwatch[spark]'" in r.stderr and r.stdout == ""


def test_the_command_line_lets_a_real_bug_through():
    r = CliRunner().invoke(_group("streamwatch_nope"), ["log"])
    assert isinstance(r.exception, ModuleNotFoundError) and r.exception.name == "streamwatch_nope"
