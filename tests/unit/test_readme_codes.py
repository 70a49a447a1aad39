"""The manual's tables of codes (docs/, built by mkdocs) against the code: every finding code
the checkpoint reader can emit is in a Findings table (docs/inspect.md, docs/state.md) with its
severity (and nothing else is), the ``--check`` table (docs/inspect.md) matches ``ExitCode``,
and the exit-code tables of ``streamwatch log``, ``events`` and ``replay`` (docs/recording.md)
match their ``--help`` (one line a code)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
#: the pages whose tables of finding codes are checked (every table headed ``| code | severity | meaning |``)
FINDING_PAGES = ("inspect.md", "state.md")


def _page(name: str) -> str:
    return (DOCS / name).read_text()


def _table_after(page: str, heading: str) -> list[list[str]]:
    """Rows (cells, stripped) of the first Markdown table after ``heading`` on docs/``page``."""
    text = _page(page)
    at = text.index(heading)
    rows = []
    for line in text[at:].splitlines()[1:]:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not set("".join(cells)) <= set("-: "):
                rows.append(cells)
        elif rows:
            break
    return rows[1:]  # without the header row


def _emitted_findings() -> dict[str, set[str]]:
    """code → severities, from every ``Finding(severity, code, …)`` call in streamwatch/
    (a severity that is not a literal is recorded as ``?``)."""
    out: dict[str, set[str]] = {}
    for path in (ROOT / "streamwatch").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Finding" and len(node.args) >= 2:
                sev, code = node.args[0], node.args[1]
                assert isinstance(code, ast.Constant), f"{path}:{node.lineno}: a finding code must be a literal"
                out.setdefault(code.value, set()).add(sev.value if isinstance(sev, ast.Constant) else "?")
    return out


def _finding_tables() -> list[list[str]]:
    """Rows of every table headed ``| code | severity | meaning |`` on the :data:`FINDING_PAGES`."""
    rows: list[list[str]] = []
    for page in FINDING_PAGES:
        text = _page(page)
        at = text.find("| code | severity | meaning |")
        while at >= 0:
            rows += _table_after_index(text, at)
            at = text.find("| code | severity | meaning |", at + 1)
    return rows


def _table_after_index(text: str, at: int) -> list[list[str]]:
    rows = []
    for line in text[at:].splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not set("".join(cells)) <= set("-: "):
                rows.append(cells)
        else:
            break
    return rows[1:]


def _documented_findings() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for cells in _finding_tables():
        codes = re.findall(r"`([a-z0-9-]+)`", cells[0])
        severities = cells[1].split("/")
        assert codes and set(severities) <= {"info", "warning", "error"}, cells
        if len(codes) == len(severities) and len(codes) > 1:  # `a`, `b` | warning/info: one each
            for code, sev in zip(codes, severities, strict=True):
                out.setdefault(code, set()).add(sev)
        else:
            for code in codes:
                out.setdefault(code, set()).update(severities)
    return out


def test_every_emitted_finding_code_is_documented_and_every_documented_one_is_emitted():
    emitted, documented = _emitted_findings(), _documented_findings()
    assert len(emitted) >= 25
    assert set(emitted) - set(documented) == set(), "codes the Findings tables (docs/) lack"
    assert set(documented) - set(emitted) == set(), "documented codes nothing emits"


def test_documented_severities_are_the_emitted_ones():
    emitted, documented = _emitted_findings(), _documented_findings()
    for code, sevs in emitted.items():
        literal = sevs - {"?"}
        assert literal <= documented[code], f"{code}: emitted as {sorted(sevs)}, docs say {sorted(documented[code])}"
        if "?" not in sevs:
            assert documented[code] == literal, f"{code}: docs say {sorted(documented[code])}, emitted {sorted(sevs)}"


def test_the_conf_drift_severities_are_the_restart_confs_ones():
    from streamwatch.checkpoint.health import RESTART_CONFS

    assert set(RESTART_CONFS.values()) == _documented_findings()["conf-drift"]


def test_check_exit_table_is_the_exit_code_enum():
    from streamwatch.cli.inspect_cmd import ExitCode

    rows = _table_after("inspect.md", "## `--check` exit codes")
    assert {int(r[0]): r[1].strip("`") for r in rows} == {int(c): c.name for c in ExitCode}


def _words(text: str) -> str:
    return " ".join(re.sub(r"[,.;]", " ", text.lower().replace("`", "")).split())


def _help_codes(command: str) -> dict[int, str]:
    """code → words of the ``Exit codes:`` lines (one a code) of ``streamwatch COMMAND --help``."""
    from streamwatch.cli import main

    help_text = CliRunner().invoke(main, [command, "--help"], terminal_width=200).output
    listed = re.findall(r"^\s+([0-4])\s{2,}(.+)$", help_text.split("Exit codes:")[1], re.M)
    assert len(listed) == len({k for k, _ in listed}), f"{command} --help: one line a code"
    return {int(k): _words(v) for k, v in listed}


def _documented_codes(marker: str) -> dict[int, str]:
    """code → words of the exit-code table after ``marker`` on docs/recording.md."""
    return {int(r[0]): _words(r[1]) for r in _table_after("recording.md", marker)}


def test_log_exit_table_matches_the_constants_and_the_help():
    from streamwatch.cli import log_cmd
    from streamwatch.errors import ExitCode

    rows = _documented_codes("## Headless logging")
    constants = {v: k for k, v in vars(log_cmd).items() if k.startswith("EXIT_") and isinstance(v, int)}
    assert set(rows) == (set(constants) or {int(c) for c in ExitCode}) == {0, 1, 2, 3, 4}
    assert _help_codes("log") == rows


@pytest.mark.parametrize("command", ["events", "replay"])
def test_event_source_exit_tables_match_the_help_and_say_4_for_unreadable(command):
    rows = _documented_codes(f"`streamwatch {command}` exit codes")
    assert set(rows) == {0, 2, 4}
    assert "unreadable" in rows[4] and "missing" in rows[4]
    assert _help_codes(command) == rows


def test_every_findings_table_is_on_a_checked_page():
    """A Findings table moved to another page would go unchecked: every page holding one is listed."""
    holding = {p.name for p in DOCS.rglob("*.md") if "| code | severity | meaning |" in p.read_text()}
    assert holding == set(FINDING_PAGES)
    assert "| code | severity | meaning |" not in (ROOT / "README.md").read_text()


def test_the_readme_links_every_page_of_the_manual_and_only_pages_that_exist():
    """The README is the way in: each docs page is linked from it, each link names a file."""
    readme = (ROOT / "README.md").read_text()
    linked = set(re.findall(r"\]\((docs/[^)#\s]+)", readme))
    assert all((ROOT / link).exists() for link in linked), sorted(link for link in linked if not (ROOT / link).exists())
    pages = {f"docs/{p.relative_to(DOCS).as_posix()}" for p in DOCS.rglob("*.md")}
    assert pages <= linked, sorted(pages - linked)
