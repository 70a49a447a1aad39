"""Land files from a data factory on a schedule, on a daemon thread (no pyspark)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Callable

from streamwatch.pipeline import DataFactory


class Feeder:
    """Calls ``factory.land(files_per_tick)`` every ``every_s`` seconds until stopped or the
    factory is exhausted, after landing ``initial_files`` at once in :meth:`start`. Errors go to ``on_error``
    (one call, then the feeder stops) instead of killing the process."""

    def __init__(
        self,
        factory: DataFactory,
        every_s: float = 1.0,
        files_per_tick: int = 1,
        initial_files: int = 10,
        max_files: int | None = None,
        on_error: Callable[[Exception], None] | None = None,
    ) -> None:
        self.factory = factory
        self.every_s = every_s
        self.files_per_tick = files_per_tick
        self.initial_files = initial_files
        self.max_files = max_files
        self.on_error = on_error
        self.landed: list[Path] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="streamwatch-feeder", daemon=True)

    def _budget(self, n: int) -> int:
        return n if self.max_files is None else max(0, min(n, self.max_files - len(self.landed)))

    def _run(self) -> None:
        try:
            while not self._stop.wait(self.every_s):
                n = self._budget(self.files_per_tick)
                if n == 0 or self.factory.exhausted:
                    return
                self.landed += self.factory.land(n)
        except Exception as e:  # disk full, bad data …: report, do not crash the app
            if self.on_error:
                self.on_error(e)

    def start(self) -> "Feeder":
        """Land ``initial_files`` now, in the caller's thread (so queries started next find
        them: an ``availableNow`` run reads what has landed when it starts), then land on the
        schedule in the background. Returns ``self``."""
        try:
            self.landed += self.factory.land(self._budget(self.initial_files))
        except Exception as e:  # disk full, bad data …: report, do not crash the app
            if self.on_error:
                self.on_error(e)
            return self
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
