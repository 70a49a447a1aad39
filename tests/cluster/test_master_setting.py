"""The master setting: ``--master`` / ``STREAMWATCH_MASTER`` / ``local[*]`` (no JVM)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from streamwatch.spark.session import SessionConfig, default_master, is_local_master


def test_default_master_comes_from_the_setting(monkeypatch, tmp_path):
    monkeypatch.delenv("STREAMWATCH_MASTER", raising=False)
    assert default_master() == "local[*]" and SessionConfig(workspace=tmp_path).master == "local[*]"
    monkeypatch.setenv("STREAMWATCH_MASTER", " spark://10.0.0.5:7077 ")
    assert default_master() == "spark://10.0.0.5:7077"
    assert SessionConfig(workspace=tmp_path).master == "spark://10.0.0.5:7077"
    assert SessionConfig(workspace=tmp_path, master="local[2]").master == "local[2]"


@pytest.mark.parametrize("master,local", [("local", True), ("local[*]", True), ("local[2,3]", True),
                                          ("local-cluster[2,1,1024]", False), ("spark://h:7077", False),
                                          ("yarn", False), ("k8s://https://h:6443", False)])
def test_is_local_master(master, local):
    assert is_local_master(master) is local


@pytest.mark.parametrize("command", ["run", "log"])
def test_empty_master_is_a_usage_error(command):
    from streamwatch.cli import main

    r = CliRunner().invoke(main, [command, "--master", " "])
    assert r.exit_code == 2 and r.stderr.strip() == f"streamwatch {command}: --master must not be empty"


@pytest.mark.parametrize("command", ["run", "log"])
def test_help_names_the_setting(command):
    from streamwatch.cli import main

    r = CliRunner().invoke(main, [command, "--help"])
    assert r.exit_code == 0 and "--master" in r.output and "STREAMWATCH_MASTER" in r.output
