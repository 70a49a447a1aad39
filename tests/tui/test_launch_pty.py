"""The dashboard commands as a person runs them: `streamwatch replay` and `streamwatch watch`
in a real pseudo-terminal (the Textual app's own Linux driver, the command's own
`run_dashboard`), waiting for the first frame to show the queries, then pressing q. No Spark.

Waits are on what the terminal shows (a query's name) and on the process exit; the deadline
is only there so that a hang fails instead of blocking CI."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import shutil
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from tests.helpers.fake_checkpoint import FakeCheckpoint

DATA = Path(__file__).parent / "data"
DEADLINE_S = 120.0
STREAMWATCH = shutil.which("streamwatch", path=str(Path(sys.executable).parent)) or "streamwatch"


class Terminal:
    """A command in a 120×40 pseudo-terminal; ``screen`` is everything it wrote (raw bytes)."""

    def __init__(self, *args: str, cwd: Path) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
        env.pop("TEXTUAL_DRIVER", None)
        self.proc = subprocess.Popen([STREAMWATCH, *args], stdin=slave, stdout=slave, stderr=slave, cwd=cwd,
                                     env=env, start_new_session=True, close_fds=True)
        os.close(slave)
        self.master = master
        self.screen = b""
        self.deadline = time.monotonic() + DEADLINE_S

    def _read(self, timeout: float) -> bool:
        """Read what is there (up to ``timeout`` s); False once the terminal is closed."""
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return True
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: the command exited and closed the terminal
            return False
        self.screen += data
        return bool(data)

    def wait_for(self, text: bytes) -> None:
        while text not in self.screen:
            left = self.deadline - time.monotonic()
            assert left > 0, f"{text!r} never shown; last output: {self.screen[-2000:]!r}"
            assert self._read(min(left, 1.0)), f"exited ({self.proc.poll()}) before showing {text!r}: {self.screen[-2000:]!r}"

    def press(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def exit_status(self) -> int:
        """Drain the terminal until the command closes it, then its exit status."""
        while self._read(max(0.0, min(self.deadline - time.monotonic(), 1.0))):
            assert time.monotonic() < self.deadline, f"did not exit: {self.screen[-2000:]!r}"
        return self.proc.wait(timeout=max(1.0, self.deadline - time.monotonic()))

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        os.close(self.master)


@pytest.fixture
def terminal(tmp_path):
    opened: list[Terminal] = []

    def open_(*args: str) -> Terminal:
        t = Terminal(*args, cwd=tmp_path)
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
