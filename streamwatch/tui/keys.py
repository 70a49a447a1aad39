"""Keys in flight: which keys the terminal delivered are not handled yet, and automatic garbage
collection held off until they are answered on screen.

Under a progress flood (100 queries at 2 progress events/s, ``bench/tui_bench.py --hundred``)
the dashboard allocates fast enough that a full collection (~50–75 ms) ran inside about one
key answer in three: the repaint a key causes allocates more than anything else, so it is
where the collector's thresholds are crossed. :class:`KeysInFlight` disables automatic
collection when a key arrives and enables it again once every key in flight has been handled
and the screen repainted after it; what was postponed runs then, after the answer is on
screen. It is never held longer than :attr:`KeysInFlight.cap_s` (a key held down, or a key
something keeps alive), and :meth:`KeysInFlight.release` is called when the app unmounts.
Collection that was disabled by someone else is left alone: only what this class disabled is
enabled again.

A key is in flight from its delivery until nothing refers to it any more: the widget it
bubbled to last has handled (or dropped) it. Textual keeps no key after that, so the weak
references here see it go as it is handled, without a garbage collection.
"""

from __future__ import annotations

import gc
import time
import weakref
from typing import Callable, Protocol

from textual import events


class _Host(Protocol):
    """What the keys need of the app: a timer and a callback after the next repaint."""

    def set_timer(self, delay: float, callback: Callable[[], object]) -> object: ...

    def call_after_refresh(self, callback: Callable[[], object]) -> bool: ...


class KeysInFlight:
    """Call :meth:`arrived` with every key the terminal delivers (before it is dispatched).

    ``in_flight`` is how many of them are not handled yet; ``held`` whether automatic garbage
    collection is off on their account now. ``cap_s`` (s) bounds one hold; after a hold ended
    at the cap, keys do not hold again for another ``cap_s``, so typing without pause still
    gets collected at least half the time. ``holds`` counts the holds begun (for tests and
    benchmarks).
    """

    def __init__(self, host: _Host, cap_s: float = 1.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.host = host
        self.cap_s = cap_s
        self.clock = clock
        self.held = False
        self.holds = 0
        self._refs: set[weakref.ref[events.Key]] = set()
        self._since = 0.0  # when the hold began (clock s)
        self._epoch = 0  # bumps on every release: callbacks of an earlier hold do nothing
        self._resume_at = 0.0  # after a hold ended at the cap, keys hold again only from then

    @property
    def in_flight(self) -> int:
        """Keys delivered and not handled yet."""
        return len(self._refs)

    def arrived(self, key: events.Key) -> None:
        """The terminal delivered ``key``: it is in flight until handled, and automatic
        collection (if it is on, and not just released at the cap) is held until then."""
        self._refs.add(weakref.ref(key, self._handled))
        now = self.clock()
        if self.held:
            if now - self._since >= self.cap_s:
                self._at_cap()
            return
        if now < self._resume_at or not gc.isenabled():
            return  # just released at the cap, or disabled elsewhere: not ours to hold
        gc.disable()
        self.held = True
        self.holds += 1
        self._since = now
        epoch = self._epoch
        self.host.set_timer(self.cap_s, lambda: self._cap(epoch))

    def _handled(self, ref: weakref.ref[events.Key]) -> None:
        """A key is gone (weak reference callback): once none is left, release after the
        repaint that shows what they did."""
        self._refs.discard(ref)
        if not self._refs and self.held:
            epoch = self._epoch
            self.host.call_after_refresh(lambda: self._painted(epoch))

    def _painted(self, epoch: int) -> None:
        if epoch == self._epoch and not self._refs:
            self.release()

    def _cap(self, epoch: int) -> None:
        if epoch == self._epoch and self.held:
            self._at_cap()

    def _at_cap(self) -> None:
        self.release()
        self._resume_at = self.clock() + self.cap_s

    def release(self) -> None:
        """Enable automatic collection again if this class disabled it (idempotent)."""
        self._epoch += 1
        if self.held:
            self.held = False
            gc.enable()
