"""The key footer, rebuilt only when the keys it shows change."""

from __future__ import annotations

from typing import Any

from textual.screen import Screen
from textual.widgets import Footer


class SteadyFooter(Footer):
    """Textual's :class:`~textual.widgets.Footer`, which rebuilds itself (removes and mounts
    every key, then a layout of the whole screen) each time the screen says its bindings may
    have changed — on every focus change. On the dashboard most focus changes (tab switches,
    the ``/`` line's escape) leave the shown keys as they were, and each rebuild cost a
    full-screen layout (with 100 queries, ``bench/tui_bench.py --hundred``) that keys
    typed meanwhile waited behind. Here the footer is rebuilt only when what it shows — each
    shown binding's key, label, action, enabled state and tooltip — differs from what it
    last showed.

    Each rebuild also left the removed keys alive: Textual binds every key to the footer's
    ``compact`` reactive (``data_bind``) and drops a closed key's watcher only when ``compact``
    changes (textual#6666), which on the dashboard is never — ~10 widgets kept a rebuild,
    several MiB an hour of keys pressed. Before each rebuild the watchers are run once with
    the current value (``mutate_reactive``), which drops the closed keys' ones: what stays
    alive is the keys shown and, until the next rebuild, the previous ones."""

    #: (key, key display, description, action, enabled, tooltip, group) of each key shown
    _shown: tuple[tuple[object, ...], ...] | None = None

    def bindings_changed(self, screen: Screen[Any]) -> None:
        if screen.app.app_focus and self.is_attached and screen is self.screen:
            shown = tuple(
                (binding.key, screen.app.get_key_display(binding), binding.description, binding.action, enabled,
                 tooltip, binding.group)
                for _, binding, enabled, tooltip in screen.active_bindings.values() if binding.show)
            if shown == self._shown:
                return
            self._shown = shown
        self.mutate_reactive(Footer.compact)
        super().bindings_changed(screen)
