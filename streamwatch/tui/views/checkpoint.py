"""Checkpoint tab: the per-batch timeline of one query's checkpoint — offsets N, commit N,
state version N, sink entry N — with the inspector's findings highlighted; ``enter`` opens a
batch (its offsets and the files it consumed). Read-only, through ``streamwatch.checkpoint``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from streamwatch.analysis import fmt
from streamwatch.analysis.dashboard import DashboardModel
from streamwatch.analysis.journeys import file_entries
from streamwatch.checkpoint import batch_timeline
from streamwatch.model.checkpoint import BatchRow, Checkpoint
from streamwatch.model.findings import Finding
from streamwatch.tui.views.base import FilteredView
from streamwatch.tui.views.table import SyncTable

BATCH_COLUMNS = ("batch", "offsets", "commit", "state", "sink", "watermark", "planned (UTC)", "finding")
SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def timeline_of(cp: Checkpoint) -> tuple[BatchRow, ...]:
    """The per-batch timeline of a checkpoint (:func:`streamwatch.checkpoint.batch_timeline`)."""
    return tuple(batch_timeline(cp))


def _sink_cell(entry: Any, sink: str | None) -> str:
    """The sink column: ``memory`` for the memory sink (it keeps no log), else the sink log's
    entry mark followed by the table's name."""
    if sink == "memory":
        return "memory"
    mark = _mark(entry)
    return f"{mark} {sink}" if sink and entry is not None else mark


def _mark(v: Any) -> str:
    if v is None:
        return "-"
    if v is True:
        return "✓"
    if v is False:
        return "✗"
    return str(v)


def sink_name(model: DashboardModel, query: str) -> str | None:
    """The query's sink as the pipeline definition names it: the table folder's name
    (flights' ``enriched`` → ``flights_weather``), ``memory`` for Spark's memory sink, None
    for a query the plan does not know."""
    try:
        q = model.plan.query(query)
    except KeyError:
        return None
    if q.sink == "memory":
        return "memory"
    return Path(q.table).name if q.table else None


def batch_of_finding(finding: Finding) -> int | None:
    """The batch id a finding is about, from its path (``…/offsets/12`` → 12)."""
    path = finding.path or ""
    name = path.rstrip("/").rsplit("/", 1)[-1].split(".")[0]
    return int(name) if name.isdigit() else None


class CheckpointView(FilteredView, Vertical):
    """The selected query's checkpoint (``show(model)``), filtered by ``needle``."""

    DEFAULT_CSS = """
    CheckpointView > Static { height: auto; }
    #cp-findings { max-height: 6; }
    #cp-batches { height: 1fr; min-height: 5; }
    #cp-batch { height: auto; max-height: 12; border: round $primary-background; }
    """

    def compose(self) -> ComposeResult:
        yield Static("checkpoint: not read yet", id="cp-head")
        yield Static("", id="cp-findings")
        yield SyncTable(BATCH_COLUMNS, id="cp-batches")
        yield Static("enter on a batch: its offsets and the files it consumed", id="cp-batch")


    def draw(self, model: DashboardModel) -> None:
        query = model.selected
        name = query or ""
        cp, error = model.checkpoints.get(name), model.cp_errors.get(name)
        timeline, text_filter = model.timelines.get(name, ()), self.needle
        head = self.query_one("#cp-head", Static)
        table = self.query_one("#cp-batches", SyncTable)
        findings_box = self.query_one("#cp-findings", Static)
        if query is None:
            head.update("no query selected")
            return
        if cp is None:
            head.update(Text(f"{query}: {error or 'not written yet'}", style="yellow" if error else "dim"))
            findings_box.update("")
            table.sync([])
            return
        findings = cp.findings
        sink = sink_name(model, query)
        t = Text()
        t.append(query, style="bold")
        t.append(f"  sink {sink or '-'} · query id {cp.query_id or '-'} · offsets {fmt.count(cp.latest_batch_id)} · "
                 f"commits {fmt.count(cp.last_committed_batch_id)} · {len(findings)} finding(s)")
        head.update(t)
        ft = Text()
        by_batch: dict[int, Finding] = {}
        for f in findings[:50]:
            if ft:
                ft.append("\n")
            ft.append(f"{f.severity:<7} {f.code}: {f.message}"[:200], style=SEVERITY_STYLE.get(f.severity, ""))
            b = batch_of_finding(f)
            if b is not None and b not in by_batch:
                by_batch[b] = f
        findings_box.update(ft)
        findings_box.display = bool(findings)
        needle = text_filter.lower()
        rows = []
        for r in reversed(timeline):  # newest first
            found = by_batch.get(r.batch_id)
            style = SEVERITY_STYLE.get(found.severity, "") if found else ""
            cells = [str(r.batch_id), _mark(r.has_offsets), _mark(r.has_commit), _mark(r.state_version),
                     _sink_cell(r.sink_entry, sink), fmt.stamp(r.watermark_ms) if r.watermark_ms else "-",
                     fmt.stamp(r.timestamp_ms), found.code if found else ""]
            if needle and needle not in " ".join(cells).lower():
                continue
            rows.append((str(r.batch_id), tuple(Text(c, style=style) if style else c for c in cells)))
        table.sync(rows)
        table.border_title = f"batches ({len(timeline):,})"

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """enter on a batch: its offsets and files (of the model's selected query)."""
        if self.model is not None and event.row_key is not None and str(event.row_key.value).isdigit():
            event.stop()
            self.open_batch(self.model.checkpoints.get(self.model.selected or ""), int(str(event.row_key.value)))

    def highlighted_batch(self) -> int | None:
        """The batch id of the row under the batches table's cursor (None: no batch row)."""
        key = self.query_one("#cp-batches", SyncTable).cursor_key()
        return int(key) if key is not None and key.isdigit() else None

    def open_batch(self, cp: Checkpoint | None, batch_id: int) -> None:
        box = self.query_one("#cp-batch", Static)
        if cp is None:
            return
        entry = next((o for o in cp.offsets if o.batch_id == batch_id), None)
        t = Text()
        t.append(f"batch {batch_id}", style="bold")
        if entry is None:
            t.append("  no offsets file")
        else:
            t.append(f"  planned {fmt.stamp(entry.timestamp_ms)} · watermark "
                     f"{fmt.stamp(entry.watermark_ms) if entry.watermark_ms else '-'}")
            for i, off in enumerate(entry.sources):
                t.append(f"\n  source {i}: {off if off is not None else '- (no offset yet)'}")
        committed = any(c.batch_id == batch_id for c in cp.commits)
        t.append(f"\n  commit: {'yes' if committed else 'not committed'}")
        files = [e for e in file_entries(cp) if e.batch_id == batch_id]
        t.append(f"\n  files consumed: {len(files)}")
        for e in files[:20]:
            t.append(f"\n    {str(e.path).rsplit('/', 1)[-1]}")
        if len(files) > 20:
            t.append(f"\n    … {len(files) - 20} more")
        box.update(t)
