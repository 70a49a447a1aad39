"""Watch landing directories with watchdog and report each file that lands as a
:class:`~streamwatch.model.landing.LandedFile`.

A file "lands" when it is created under, or renamed into, a watched directory. Hidden and
temporary names (leading ``.`` or ``_``, which Spark's file source ignores too) are skipped,
so a factory that writes ``.name.tmp`` and renames it reports the file once, complete.
The callback runs on watchdog's observer thread; it must not block.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from streamwatch.model.landing import LandedFile


def _visible(path: str) -> bool:
    return not os.path.basename(path).startswith((".", "_"))


class _Handler(FileSystemEventHandler):
    def __init__(self, source: str, on_landed: Callable[[LandedFile], None]) -> None:
        self._source = source
        self._on_landed = on_landed

    def _report(self, path: str) -> None:
        if not _visible(path):
            return
        try:
            size = os.stat(path).st_size
        except OSError:  # gone again (archived, cleaned up) before we looked
            return
        self._on_landed(LandedFile(self._source, path, size, int(time.time() * 1000)))

    def on_created(self, event: FileSystemEvent) -> None:
        if not event.is_directory:
            self._report(os.fsdecode(event.src_path))

    def on_moved(self, event: FileSystemEvent) -> None:
        if not event.is_directory:
            self._report(os.fsdecode(event.dest_path))


class LandingWatcher:
    """Watches ``dirs`` (source name → directory, created when missing) until ``stop()``.

    Usable as a context manager. ``on_landed`` is called once per landed file."""

    def __init__(self, dirs: Mapping[str, Path], on_landed: Callable[[LandedFile], None]) -> None:
        self._observer = Observer()
        self._observer.daemon = True
        for source, d in dirs.items():
            d.mkdir(parents=True, exist_ok=True)
            self._observer.schedule(_Handler(source, on_landed), str(d), recursive=False)

    def start(self) -> LandingWatcher:
        self._observer.start()
        return self

    def stop(self) -> None:
        self._observer.stop()
        if self._observer.is_alive():
            self._observer.join(timeout=5)

    def __enter__(self) -> LandingWatcher:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
