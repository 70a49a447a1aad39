"""Files arriving in a landing directory (the input of a file source)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LandedFile:
    """A file that appeared (was created or renamed into place) under a watched directory.

    ``source`` names the landing source (e.g. ``flights``); ``size_bytes`` is the size when
    seen; ``landed_at_ms`` is the epoch ms when the watcher saw it.
    """

    source: str
    path: str
    size_bytes: int
    landed_at_ms: int

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]
