"""A following event reader drained in a thread, for tests that append to what it follows."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable


class Follower:
    """Drains ``open_reader(stop)`` — a following reader such as ``read_events(path, report,
    follow=True, stop=stop)``, built here in the caller's thread so the format is chosen from
    what is on disk now — in a daemon thread. ``seen`` gets every object in order, ``first`` is
    set when the first arrives, and ``stop`` once ``want`` have arrived."""

    def __init__(self, open_reader: Callable[[threading.Event], Iterable[object]], want: int) -> None:
        self.stop, self.first = threading.Event(), threading.Event()
        self.seen: list[object] = []
        self._want = want
        self._thread = threading.Thread(target=self._drain, args=(open_reader(self.stop),), daemon=True)
        self._thread.start()

    def _drain(self, events: Iterable[object]) -> None:
        for e in events:
            self.seen.append(e)
            self.first.set()
            if len(self.seen) == self._want:
                self.stop.set()

    def finish(self, timeout_s: float = 20) -> None:
        """Wait up to ``timeout_s`` for the reader to end by itself (``want`` objects arrived),
        then stop it; fails when it had not ended."""
        self._thread.join(timeout_s)
        alive = self._thread.is_alive()
        self.stop.set()
        assert not alive, f"the follow did not end: {len(self.seen)} of {self._want} objects arrived"
