"""Key response as the user sees it: the time until the app writes a frame showing the answer."""

from __future__ import annotations

import asyncio
import time


class Frames:
    """Watches the frames the app writes to the terminal (``App._display``, called once the
    compositor has rendered an update): :meth:`until` gives the seconds from now to the first
    frame written while a predicate holds — what the user sees, with no polling task and no
    message round trip between the app's state changing and the timestamp."""

    def __init__(self, app) -> None:
        self._waiting: list[tuple[object, asyncio.Future]] = []
        written = app._display

        def display(screen, update) -> None:
            written(screen, update)
            if update is None or not self._waiting:
                return
            now = time.monotonic()
            for item in list(self._waiting):
                predicate, done = item
                if predicate() and not done.done():
                    done.set_result(now)
                    self._waiting.remove(item)

        app._display = display

    async def until(self, predicate, timeout_s: float = 120.0) -> float:
        """Seconds until a frame is written while ``predicate()`` holds (a frame written
        before this call does not count). Call it before the app can act on the keys it times:
        posting keys and calling this with no ``await`` between them is enough."""
        t0 = time.monotonic()
        done = asyncio.get_running_loop().create_future()
        self._waiting.append((predicate, done))
        return await asyncio.wait_for(done, timeout_s) - t0
