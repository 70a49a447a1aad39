"""Keys in flight: which keys the terminal delivered are not handled yet, and what waits until
they are answered on screen — automatic garbage collection and the dashboard's next frame.

Under a progress flood (100 queries at 2 progress events/s, ``bench/tui_bench.py --hundred``)
the dashboard allocates fast enough that a full collection (~50–75 ms) ran inside about one
key answer in three: the repaint a key causes allocates more than anything else, so it is
where the collector's thresholds are crossed; and a frame of new progress (5–20 ms) due
meanwhile ran before the key's repaint. :class:`KeysInFlight` disables automatic collection
when a key arrives and enables it again once every key in flight has been handled and the
screen repainted after it; the collection and the frame that were postponed run then, after
the answer is on screen. No answer lasts longer than :attr:`KeysInFlight.cap_s` (a key held
down, or a key something keeps alive), and :meth:`KeysInFlight.release` is called when the
app unmounts. Collection that was disabled by someone else is left alone: only what this
class disabled is enabled again.

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

    ``in_flight`` is how many of them are not handled yet. A key begins an *answer* that lasts
    until no key is in flight and the screen has been repainted twice since (``answering``);
    during it automatic garbage collection is off on its account (``held``, unless someone
    else had disabled it) and work handed to :meth:`after_answer` waits. ``cap_s`` (s) bounds
    one answer; after an answer ended at the cap, keys do not begin another for ``cap_s``, so
    typing without pause still gets collected and drawn at least half the time. ``answers``
    counts the answers begun (for tests and benchmarks).
    """

    def __init__(self, host: _Host, cap_s: float = 1.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.host = host
        self.cap_s = cap_s
        self.clock = clock
        self.answering = False
        self.held = False
        self.answers = 0
        self._refs: set[weakref.ref[events.Key]] = set()
        self._later: list[Callable[[], object]] = []
        self._since = 0.0  # when the answer began (clock s)
        self._epoch = 0  # bumps on every release: callbacks of an earlier answer do nothing
        self._resume_at = 0.0  # after an answer ended at the cap, keys begin one only from then

    @property
    def in_flight(self) -> int:
        """Keys delivered and not handled yet."""
        return len(self._refs)

    def arrived(self, key: events.Key) -> None:
        """The terminal delivered ``key``: it is in flight until handled, and an answer begins
        (unless one is under way, or one just ended at the cap)."""
        self._refs.add(weakref.ref(key, self._handled))
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
        if gc.isenabled():  # disabled elsewhere: not ours to hold or release
            gc.disable()
            self.held = True
        epoch = self._epoch
        self.host.set_timer(self.cap_s, lambda: self._cap(epoch))

    def after_answer(self, work: Callable[[], object]) -> None:
        """Run ``work`` once the answer under way is painted (now, when none is)."""
        if self.answering:
            self._later.append(work)
        else:
            work()

    def _handled(self, ref: weakref.ref[events.Key]) -> None:
        """A key is gone (weak reference callback): once none is left, release after the
        repaints that show what they did."""
        self._refs.discard(ref)
        if not self._refs and self.answering:
            epoch = self._epoch
            self.host.call_after_refresh(lambda: self._painted(epoch))

    def _painted(self, epoch: int, after: int = 1) -> None:
        """After a repaint with no key in flight: release after ``after`` more repaints (what
        a key's handler asked to run after the next refresh — enter moving the focus to the
        tab it opened — paints one refresh later)."""
        if epoch != self._epoch or self._refs:
            return
        if after:
            self.host.call_after_refresh(lambda: self._painted(epoch, after - 1))
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
        disabled it, then the work that waited for it."""
        self._epoch += 1
        self.answering = False
        if self.held:
            self.held = False
            gc.enable()
        later, self._later = self._later, []
        for work in later:
            work()
