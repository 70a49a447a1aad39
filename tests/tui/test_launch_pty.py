"""The dashboard commands as a person runs them: `streamwatch replay` and `streamwatch watch`
in a real pseudo-terminal (the Textual app's own Linux driver, the command's own
`run_dashboard`), waiting for the first frame to show the queries, then pressing q. No Spark.

Waits are on what the terminal shows (a query's name) and on the process exit; the deadline
is only there so that a hang fails instead of blocking CI."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.helpers.fake_checkpoint import FakeCheckpoint
from tests.helpers.terminal import Terminal

DATA = Path(__file__).parent / "data"
DEADLINE_S = 120.0


@pytest.fixture
def terminal(tmp_path):
    opened: list[Terminal] = []

    def open_(*args: str) -> Terminal:
        t = Terminal(*args, cwd=tmp_path, deadline_s=DEADLINE_S)
        opened.append(t)
        return t

    yield open_
    for t in opened:
        t.close()


def test_replay_shows_the_recorded_queries_and_q_quits_with_0(terminal):
    t = terminal("replay", str(DATA / "flights_run.jsonl"), "--speed", "0")
    t.wait_for(b"flights_gold")
    t.press("q")
    assert t.exit_status() == 0
    assert b"Traceback" not in t.screen


def test_watch_dashboard_on_a_checkpoint_and_q_quits_with_0(terminal, tmp_path):
    cp = FakeCheckpoint(tmp_path / "checkpoints" / "orders_gold", tmp_path / "tables" / "orders_gold")
    now = int(time.time() * 1000)
    for b in range(3):
        cp.plan(b, now - 30_000 + 5_000 * b, [f"file:///in/{b}.json"])
        cp.commit(b, now - 29_000 + 5_000 * b, [(f"file:///out/part-{b}.parquet", 10)])
    t = terminal("watch", str(cp.root), "--poll", "0.2")
    t.wait_for(b"orders_gold")
    t.press("q")
    assert t.exit_status() == 0
    assert b"Traceback" not in t.screen
