"""The dashboard's one say over Python's garbage collector, which is process-global: what it
changes, it changes for every thread of the process, so it is done here and only here, and
undone when the dashboard goes away.

Why the dashboard touches the collector at all: under a progress flood (100 queries at 2
progress events/s, ``bench/tui_bench.py --hundred``) it allocates fast enough that a full
collection (40–100 ms on that load) often lands inside a key's answer and delays it, and
every full collection walks the widgets, styles and model objects that live as long as the
dashboard. Two remedies, measured in docs/changelog.md:

- :meth:`GcPolicy.freeze_long_lived`, once the dashboard's widgets exist: what is alive then
  lives as long as the dashboard, and is moved out of the collector's sight (``gc.freeze``),
  so full collections stop walking it;
- :meth:`GcPolicy.hold` / :meth:`GcPolicy.release` around a key's answer
  (:class:`streamwatch.tui.keys.KeysInFlight` decides when): automatic collection is off until
  the answer is on screen; the collection that was due runs after it.

A hold never takes the collector from whoever else disabled it (it is left disabled and not
enabled on release), and :meth:`GcPolicy.restore` — called when the app unmounts — ends any
hold and unfreezes what this policy froze, so a process that goes on after the dashboard
(a test run, ``streamwatch watch`` returning) gets the collector as it was.
"""

from __future__ import annotations

import gc


class GcPolicy:
    """The collector switches the dashboard uses (see the module docstring for why).

    ``held``: automatic collection is disabled on this policy's account (a :meth:`hold` found
    it enabled); ``frozen``: :meth:`freeze_long_lived` ran and :meth:`restore` has not."""

    def __init__(self) -> None:
        self.held = False
        self.frozen = False

    def freeze_long_lived(self) -> None:
        """Collect once, then move every object alive now to the permanent generation
        (``gc.freeze``): full collections skip what lives as long as the dashboard."""
        gc.collect()
        gc.freeze()
        self.frozen = True

    def hold(self) -> bool:
        """Automatic collection off until :meth:`release`, unless it was already off (then it
        is not this policy's to hold). Returns whether this call took the hold."""
        if self.held or not gc.isenabled():
            return False
        gc.disable()
        self.held = True
        return True

    def release(self) -> None:
        """End the hold (idempotent): automatic collection on again if :meth:`hold` turned it
        off; a collection that came due meanwhile runs at the next allocation."""
        if self.held:
            self.held = False
            gc.enable()

    def restore(self) -> None:
        """The dashboard is going away: end any hold and unfreeze what was frozen (the
        frozen objects go back to the oldest generation)."""
        self.release()
        if self.frozen:
            self.frozen = False
            gc.unfreeze()
