"""A streamwatch command in a real 120×40 pseudo-terminal, for the tests that run the
dashboard as a person does. Waits are on what the terminal shows and on the process exit; the
deadline only turns a hang into a failure instead of a blocked CI run."""

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

STREAMWATCH = shutil.which("streamwatch", path=str(Path(sys.executable).parent)) or "streamwatch"


class Terminal:
    """A command in a 120×40 pseudo-terminal; ``screen`` is everything it wrote (raw bytes)."""

    def __init__(self, *args: str, cwd: Path, deadline_s: float = 120.0) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
        env.pop("TEXTUAL_DRIVER", None)
        self.proc = subprocess.Popen([STREAMWATCH, *args], stdin=slave, stdout=slave, stderr=slave, cwd=cwd,
                                     env=env, start_new_session=True, close_fds=True)
        os.close(slave)
        self.master = master
        self.screen = b""
        self.deadline = time.monotonic() + deadline_s

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
