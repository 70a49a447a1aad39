"""Keys in flight: which keys the terminal delivered are not handled yet, and automatic garbage
collection held off until they are answered on screen.

Under a progress flood (100 queries at 2 progress events/s, ``bench/tui_bench.py --hundred``)
the dashboard allocates fast enough that a full collection often lands inside a key's
answer and delays it: the repaint a key causes allocates more than anything else, so it is
where the collector's thresholds are crossed. :class:`KeysInFlight` begins an *answer* when a
key arrives — automatic collection off — and ends it once no key is in flight and the screen
has been repainted after the last one; the collection that was postponed runs then, after the
answer is on screen. No answer lasts longer than :attr:`KeysInFlight.cap_s` (a key held down,
or a key's way kept busy), and :meth:`KeysInFlight.release` is called when the app unmounts.
The collector itself is switched only through :class:`~streamwatch.tui.gc_policy.GcPolicy`
(which leaves alone a collector someone else disabled). The dashboard's frames are not held
back during an answer: an answer is only as precise as "in flight" below, and frames held
that long would delay every query's update more than they speed up the key (the
measurements: docs/changelog.md).

A key is in flight from its delivery until it is handled: while it is alive (weak
references) and messages are queued on its way — the screen, the focused widget and the
widgets it bubbles up to. Alive alone is not enough: each message loop a key passed through
keeps the last message it ran until its next one, which for a tab pane can be minutes.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable
from typing import Protocol

from textual import events

from streamwatch.tui.gc_policy import GcPolicy


class _Host(Protocol):
    """What the keys need of the app: a timer, a callback after the next repaint, and whether
    messages are queued on a key's way (the screen, the focused widget and its ancestors)."""

    def set_timer(self, delay: float, callback: Callable[[], object]) -> object: ...

    def call_after_refresh(self, callback: Callable[[], object]) -> bool: ...

    def key_route_busy(self) -> bool: ...


class KeysInFlight:
    """Call :meth:`arrived` with every key the terminal delivers (before it is dispatched).

    ``in_flight`` is how many of them are not handled yet. A key begins an *answer* that lasts
    until no key is in flight and the screen has been repainted once more since
    (``answering``); during it automatic garbage collection is held through ``collector``
    (``held``, unless someone else had disabled it). ``cap_s`` (s) bounds one answer; after an answer
    ended at the cap, keys do not begin another for ``cap_s``, so typing without pause still
    gets collected at least half the time. ``answers`` counts the answers begun.
    """

    def __init__(self, host: _Host, collector: GcPolicy, cap_s: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.host = host
        self.collector = collector
        self.cap_s = cap_s
        self.clock = clock
        self.answering = False
        self.answers = 0
        self._refs: set[weakref.ref[events.Key]] = set()
        self._since = 0.0  # when the answer began (clock s)
        self._epoch = 0  # bumps on every release: callbacks of an earlier answer do nothing
        self._resume_at = 0.0  # after an answer ended at the cap, keys begin one only from then
        self._repaints = 0  # repaints still to wait for once no key is in flight

    @property
    def held(self) -> bool:
        """Automatic collection is off on this answer's account."""
        return self.collector.held

    @property
    def in_flight(self) -> int:
        """Keys delivered and not handled yet: alive while messages are queued on their way.
        (A handled key can stay alive a while: each message loop it passed through keeps
        the last message it ran until its next one.)"""
        return len(self._refs) if self._refs and self.host.key_route_busy() else 0

    def arrived(self, key: events.Key) -> None:
        """The terminal delivered ``key``: it is in flight until handled, and an answer begins
        (unless one is under way, or one just ended at the cap)."""
        self._refs.add(weakref.ref(key, self._handled))
        self._repaints = 1
        now = self.clock()
        if self.answering:
            if now - self._since >= self.cap_s:
                self._at_cap()
            return
        if now < self._resume_at:
            return
        self.answering = True
        self.answers += 1
        self._since = now
        self.collector.hold()  # disabled elsewhere: not ours to hold or release
        epoch = self._epoch
        self.host.set_timer(self.cap_s, lambda: self._cap(epoch))
        self.host.call_after_refresh(lambda: self._painted(epoch))

    def _handled(self, ref: weakref.ref[events.Key]) -> None:
        """A key is gone (weak reference callback)."""
        self._refs.discard(ref)

    def _painted(self, epoch: int) -> None:
        """After a repaint (or with nothing to paint): while a key is in flight, look again
        after the next one; then release one repaint after the last key's (what a key's
        handler asked to run after the next refresh — enter moving the focus to the tab it
        opened — paints one refresh later)."""
        if epoch != self._epoch:
            return
        if self.in_flight or self._repaints:
            if not self.in_flight:
                self._repaints -= 1
            self.host.call_after_refresh(lambda: self._painted(epoch))
        else:
            self.release()

    def _cap(self, epoch: int) -> None:
        if epoch == self._epoch and self.answering:
            self._at_cap()

    def _at_cap(self) -> None:
        self.release()
        self._resume_at = self.clock() + self.cap_s

    def release(self) -> None:
        """End the answer under way (idempotent): automatic collection on again if this class
        disabled it."""
        self._epoch += 1
        self.answering = False
        self.collector.release()
