"""The dashboard's tabs, declared once: the ``:`` command that opens each (its id, also the
``TabPane`` id), the title on the tab row, the key bound to it, and the widget that takes the
focus when it is shown. The command registry (:mod:`streamwatch.tui.commands`), the
dashboard screen's panes and its focus all read :class:`Tab`."""

from __future__ import annotations

import enum


class Tab(enum.StrEnum):
    """One tab, in tab-row order. The value is the tab's id (``TabPane`` id and ``:``
    command); :attr:`label` its title (:attr:`heading` with its key), :attr:`key` the digit that switches to it and
    :attr:`focus` the id of the widget it focuses."""

    label: str
    key: str
    focus: str

    def __new__(cls, tab_id: str, label: str, focus: str) -> Tab:
        tab = str.__new__(cls, tab_id)
        tab._value_ = tab_id
        tab.label = label
        tab.key = str(len(cls.__members__) + 1)
        tab.focus = focus
        return tab

    QUERIES = "queries", "Queries", "query-table"
    DETAIL = "detail", "Detail", "detail-view"
    CHECKPOINT = "checkpoint", "Checkpoint", "cp-batches"
    LANDING = "landing", "Landing", "landing-table"
    EVENTS = "events", "Events", "event-table"
    RESULTS = "results", "Results", "results-table"
    PIPELINE = "pipeline", "Pipeline", "pipeline-view"

    @classmethod
    def of(cls, tab_id: str) -> Tab:
        """The tab whose id is ``tab_id`` (a ``TabPane`` id, a binding's argument); raises
        ``ValueError`` for none."""
        for tab in cls:
            if tab.value == tab_id:
                return tab
        raise ValueError(f"no tab {tab_id!r}")

    @property
    def heading(self) -> str:
        """The tab row's text: ``1 Queries``."""
        return f"{self.key} {self.label}"
