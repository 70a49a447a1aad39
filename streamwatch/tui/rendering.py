"""Drawing the dashboard: the queries, detail, checkpoint, landing and events tabs, the
session line and the status line, mixed into :class:`~streamwatch.tui.app.StreamwatchApp`.

Only what is marked dirty is redrawn, and only on the active tab (the queries table always,
since it is the overview); a display error is shown on the status line, never raised. The
queries table shows per query: status, diagnosis, batch id, input and processed rates
(rows/s), the last batch's duration (ms), backlog (landed files not yet read), watermark
(UTC), trigger, output mode and total input rows. The landing table shows each landed file's
journey (landed → read → committed) and the backlog per source (files).
"""

from __future__ import annotations

import time
from typing import Any, Callable

from rich.markup import escape
from rich.text import Text
from textual.widgets import Static, TabbedContent

from streamwatch.tui import fmt
from streamwatch.tui.diagnosis import Diagnosis, diagnose, trigger_interval_ms
from streamwatch.tui.journey import Journey, backlog, journeys
from streamwatch.tui.state import QueryRow
from streamwatch.tui.views.checkpoint import CheckpointView
from streamwatch.tui.views.detail import DetailView
from streamwatch.tui.views.table import SyncTable

DIAG_STYLE = {"ok": "green", "waiting": "cyan", "slow": "yellow", "stuck": "bold red", "failed": "bold red"}


class RenderingMixin:
    """Rendering for :class:`~streamwatch.tui.app.StreamwatchApp` (needs its attributes: the
    ``board``, ``plan``, ``backend``, checkpoints, landed files, event log, ``filters`` and
    ``selected``)."""

    @property
    def active_tab(self) -> str:
        return self._main.query_one("#tabs", TabbedContent).active or "queries"

    def _render_dirty(self) -> None:
        if not self._main.drawable:
            return
        dirty, self._dirty = self._dirty, set()
        tab = self.active_tab
        if "queries" in dirty or "landing" in dirty:
            self._guard(self.render_queries)
        if tab == "detail" and "detail" in dirty:
            self._guard(self.render_detail)
        if tab == "landing" and "landing" in dirty:
            self._guard(self.render_landing)
        if tab == "events" and "events" in dirty:
            self._guard(self.render_events)
        if tab == "results" and "results-maybe" in dirty and time.monotonic() - self._results_at > 1.0:
            self.refresh_results()
        if tab == "checkpoint" and "checkpoint" in dirty:
            self._guard(self.render_checkpoint)

    def _guard(self, fn: Callable[[], None]) -> None:
        """Draw with ``fn`` unless the dashboard is torn down; failures go to the status line."""
        self._main.draw(fn)

    def render_all(self) -> None:
        if not self._main.drawable:
            return
        self._dirty = set()
        for fn in (self.render_queries, self.render_detail, self.render_checkpoint, self.render_landing,
                   self.render_events):
            self._guard(fn)

    def _tick(self) -> None:
        if not self.paused:
            self._guard(self.render_queries)

    def _session_text(self) -> str:
        pause = "[b reverse] PAUSED [/] " if self.paused else ""
        return pause + escape(fmt.session_line(self.session_info, replay=self.plan.trigger == "replay"))

    def _set_status(self, text: str, level: str = "info") -> None:
        self._main.set_status(text, level)

    def render_session(self) -> None:
        self._main.query_one("#session", Static).update(self._session_text())

    def trigger_of(self, name: str) -> str:
        return (getattr(self.backend, "triggers", None) or {}).get(name) or self.plan.trigger

    def output_mode_of(self, name: str) -> str:
        return (getattr(self.backend, "output_modes", None) or {}).get(name) or "-"

    def current_journeys(self) -> list[Journey]:
        """Each landed file's journey (recomputed when files landed or checkpoints were read)."""
        if self._journeys_stale:
            self.journeys = journeys(self.landed, self.consumed)
            self._journeys_stale = False
        return self.journeys

    def query_backlog(self) -> dict[str, int | None]:
        self.current_journeys()
        per_source = backlog(self.journeys)
        sources_of: dict[str, set[str]] = {}
        for j in self.journeys:
            if j.consumed is not None:
                sources_of.setdefault(j.consumed.query, set()).add(j.file.source)
        out: dict[str, int | None] = {}
        first = self.plan.queries[0].query_name if self.plan.queries else None
        for name in self.board.rows:
            srcs = sources_of.get(name)
            if srcs is None and name == first and not sources_of and per_source:
                srcs = set(per_source)
            out[name] = sum(per_source.get(s, 0) for s in srcs) if srcs else None
        return out

    def _query_cells(self, row: QueryRow, diag: Diagnosis, backlog_n: int | None) -> tuple:
        status_style = {"failed": "bold red", "stopped": "dim", "idle": "cyan", "active": "green"}.get(row.status, "")
        return (
            row.name,
            Text(row.status, style=status_style),
            Text(diag.text[:60], style=DIAG_STYLE.get(diag.code, "")),
            fmt.count(row.batch_id),
            fmt.rate(row.input_rps),
            fmt.rate(row.processed_rps),
            fmt.count(row.batch_duration_ms),
            fmt.count(backlog_n),
            fmt.iso(row.watermark),
            self.trigger_of(row.name).replace("processingTime=", ""),
            self.output_mode_of(row.name),
            fmt.count(row.total_input_rows),
        )

    def render_queries(self) -> None:
        now = self.clock()
        needle = self.filters["queries"].lower()
        backlogs = self.query_backlog()
        rows = []
        for name, row in self.board.rows.items():
            diag = diagnose(row, self.heads.get(name), trigger_interval_ms(self.trigger_of(name)), now)
            self.diagnoses[name] = diag
            if needle and needle not in f"{name} {row.status} {diag.text}".lower():
                continue
            rows.append((name, self._query_cells(row, diag, backlogs.get(name))))
        table = self._main.query_one("#query-table", SyncTable)
        table.sync(rows)
        title = f"{self.plan.pipeline} · {len(self.board.rows)} queries"
        table.border_title = title + (f" · /{needle}" if needle else "")

    def render_detail(self) -> None:
        name = self.selected
        row = self.board.rows.get(name) if name else None
        view = self._main.query_one("#detail-view", DetailView)
        view.show(row, self.diagnoses.get(name or ""), self.trigger_of(name or ""), self.output_mode_of(name or ""),
                  width=max(20, self.size.width - 4))

    def render_checkpoint(self) -> None:
        name = self.selected
        self._main.query_one("#checkpoint-view", CheckpointView).show(
            name, self.checkpoints.get(name or ""), self.cp_errors.get(name or ""),
            self.timelines.get(name or "", ()), self.filters["checkpoint"])

    def render_landing(self) -> None:
        needle = self.filters["landing"].lower()
        rows = []
        for j in self.current_journeys():
            f = j.file
            cells = (fmt.clock(f.landed_at_ms), f.source, f.name, fmt.size(f.size_bytes), j.text)
            if needle and needle not in " ".join(cells).lower():
                continue
            style = {"landed": "yellow", "read": "cyan", "committed": "green"}[j.stage]
            rows.append((f"{f.path}@{f.landed_at_ms}", (*cells[:4], Text(j.text, style=style))))
        table = self._main.query_one("#landing-table", SyncTable)
        table.sync(rows, follow=True)
        table.border_title = f"landed files ({self.landed_count:,})" + (f" · /{needle}" if needle else "")
        per = backlog(self.journeys)
        text = " · ".join(f"{s}: {n:,} not yet read" for s, n in sorted(per.items())) or "no files landed yet"
        self._main.query_one("#backlog", Static).update(Text(f"backlog — {text}"))

    def render_events(self) -> None:
        needle = self.filters["events"].lower()
        rows = [(k, line) for k, line in self.event_log if not needle or needle in " ".join(line).lower()]
        table = self._main.query_one("#event-table", SyncTable)
        table.sync(rows, follow=True)
        table.border_title = f"events ({self.event_count:,})" + (f" · /{needle}" if needle else "")
