"""Land files from a data factory on a schedule, on a daemon thread (no pyspark), paced by
what the queries reading them have read (:class:`LandingBacklog`)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from streamwatch.checkpoint.filelog import read_file_log
from streamwatch.checkpoint.fs import LocalStorage
from streamwatch.model.filelogs import SourceLog
from streamwatch.pipeline import DataFactory


class LandingBacklog:
    """Files in a landing folder that no query reading it has read yet, by Spark's own account:
    a file source records every file it reads in its checkpoint's file-source log
    (``sources/<i>/``, ``FileStreamSourceLog``) when it plans the batch. ``checkpoints`` are the
    local checkpoint folders of the queries reading ``landing`` (a missing one has read
    nothing). Files are matched by name (a landed file is never renamed once there); names
    starting with ``.`` (temporary, being written) are not counted."""

    def __init__(self, landing: Path, checkpoints: Iterable[Path]) -> None:
        self.landing = landing
        self.checkpoints = list(checkpoints)
        self._storage = LocalStorage()

    def _read(self) -> set[str]:
        names: set[str] = set()
        for cp in self.checkpoints:
            try:
                folders = [e.path for e in os.scandir(cp / "sources") if e.is_dir()]
            except OSError:
                continue
            for folder in folders:
                log, _ = read_file_log(self._storage, folder, "source")
                if isinstance(log, SourceLog):
                    names.update(os.path.basename(str(e.path)) for e in log.entries)
        return names

    def unread(self) -> int:
        """Files landed and not read by any of the queries (0 for a missing landing folder)."""
        try:
            landed = {e.name for e in os.scandir(self.landing) if e.is_file() and not e.name.startswith(".")}
        except OSError:
            return 0
        return len(landed - self._read()) if landed else 0


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
        hold: Callable[[], bool] | None = None,
    ) -> None:
        self.factory = factory
        self.every_s = every_s
        self.files_per_tick = files_per_tick
        self.initial_files = initial_files
        self.max_files = max_files
        self.on_error = on_error
        self.hold = hold
        #: scheduled landings skipped because ``hold`` said so
        self.held = 0
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
                if self.hold is not None and self.hold():
                    self.held += 1
                    continue
                self.landed += self.factory.land(n)
        except Exception as e:  # disk full, bad data …: report, do not crash the app
            if self.on_error:
                self.on_error(e)

    def start(self) -> Feeder:
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
