"""``streamwatch land PIPELINE --files N`` lands exactly N files per source (issue 32 item 8.6),
malformed-record files (``--bad-ratio``) counted among them; the account is the files in
the landing folder, counted by listing it (hidden state and temporary files are not landed
files). The data set is the one it always was: landed in any number of calls, the same files
with the same contents."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from streamwatch.cli import main


def _land(*args):
    return CliRunner().invoke(main, ["land", *args])


def _landed(folder):
    return sorted(p.name for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))


@pytest.mark.parametrize("n", [1, 3, 7])
def test_files_n_lands_exactly_n_files_with_bad_ones_among_them(tmp_path, n):
    out = _land("orders", "--files", str(n), "--bad-ratio", "0.1", "--workspace", str(tmp_path))
    assert out.exit_code == 0, out.output
    landing = tmp_path / "landing" / "orders" / "orders"
    assert len(_landed(landing)) == n, _landed(landing)
    printed = [line for line in out.stdout.splitlines() if line.endswith(".json")]
    assert len(printed) == n and f"landed {n} file(s)" in out.stderr


def test_files_add_up_over_calls_and_the_data_set_is_unchanged(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    assert _land("orders", "--files", "12", "--bad-ratio", "0.2", "--workspace", str(a)).exit_code == 0
    for n in (3, 1, 5, 3):
        assert _land("orders", "--files", str(n), "--bad-ratio", "0.2", "--workspace", str(b)).exit_code == 0
    la, lb = a / "landing" / "orders" / "orders", b / "landing" / "orders" / "orders"
    assert len(_landed(la)) == len(_landed(lb)) == 12
    assert {p: (la / p).read_text() for p in _landed(la)} == {p: (lb / p).read_text() for p in _landed(lb)}
    assert any("_bad_" in p for p in _landed(la)), "bad_ratio=0.2 lands malformed orders"
    good = [p for p in _landed(la) if "_bad_" not in p]
    assert good and all(isinstance(json.loads((la / p).read_text()), list) for p in good)


def test_every_pipeline_lands_exactly_n_files_per_file_source(tmp_path):
    for pipeline, extra in (("flights", ["--late-ratio", "0.1", "--bad-ratio", "0.1"]), ("events", []),
                            ("sessions", [])):
        ws = tmp_path / pipeline
        out = _land(pipeline, "--files", "3", *extra, "--workspace", str(ws))
        assert out.exit_code == 0, out.output
        for source in (ws / "landing" / pipeline).iterdir():
            assert len(_landed(source)) == 3, (pipeline, source.name, _landed(source))


def test_the_help_says_what_files_counts():
    out = CliRunner().invoke(main, ["land", "--help"], terminal_width=200).output
    assert "exactly FILES" in out and "malformed records (--bad-ratio) count among them" in out
