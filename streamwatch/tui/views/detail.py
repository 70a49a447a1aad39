"""Query detail: rates, stacked batch duration, watermark gap, state, Kafka offsets behind
latest (Spark's min/avg/maxOffsetsBehindLatest source metrics), state operators, sources,
sink, and — for a failed query — the exception and the failing batch (for a query stopped on
request, the exception Spark still reported, marked as a stop)."""

from __future__ import annotations

from collections.abc import Mapping

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from streamwatch.analysis import fmt
from streamwatch.analysis.board import QueryRow
from streamwatch.analysis.dashboard import DashboardModel
from streamwatch.analysis.health_window import Health
from streamwatch.analysis.samples import OPERATIONS, SampleHistory
from streamwatch.model.events import QueryProgress
from streamwatch.model.kafka import KafkaLag
from streamwatch.tui.charts import Chart, StackedBars, TimelineChart
from streamwatch.tui.views.advice import AdviceSection
from streamwatch.tui.views.base import ModelView
from streamwatch.tui.views.table import SyncTable

OPERATOR_COLUMNS = ("operator", "rows total", "updated", "removed", "dropped (wm)", "memory", "custom metrics")
SOURCE_COLUMNS = ("source", "start offset", "end offset", "latest offset", "rows", "in rows/s", "metrics")
#: how each health verdict is coloured in the detail head
HEALTH_STYLES = {Health.OK: "green", Health.IDLE: "cyan", Health.LAGGING: "yellow", Health.STALLED: "bold red",
                 Health.STOPPED: "bold red", Health.FAILING: "bold red", Health.UNKNOWN: "dim"}


class DetailView(ModelView, VerticalScroll):
    """Everything about the model's selected query (``show(model)``); ``shown`` is the name of
    the query it last drew (None before the first). The tab takes the focus and scrolls as a
    whole (↑ ↓ pgup pgdn home end, the mouse wheel): its charts, state operators, sources and
    sink are each reached on a short screen."""

    shown: str | None = None

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._texts: dict[str, str | Text] = {}  # what each Static shows (see _put)

    DEFAULT_CSS = """
    DetailView > Static { height: auto; }
    DetailView > TimelineChart, DetailView > StackedBars { margin: 1 0 0 0; }
    DetailView > SyncTable { height: auto; margin: 1 0 0 0; }
    #detail-failure { color: $error; }
    """

    def compose(self) -> ComposeResult:
        yield Static("select a query in the queries view (enter)", id="detail-head")
        yield Static("", id="detail-failure")
        yield TimelineChart("input vs processed", unit="rows/s", id="chart-rates")
        yield StackedBars("batch duration by operation", OPERATIONS, unit="ms", id="chart-durations")
        yield TimelineChart("watermark gap (eventTime.max − watermark)", unit="s", id="chart-wm")
        yield TimelineChart("state rows and memory", unit="rows", right=("memory",), right_unit="KiB",
                            id="chart-state")
        yield TimelineChart("Kafka offsets behind latest (over partitions)", unit="records", id="chart-kafka-behind")
        # the tables are drawn whole and never take the focus: the keys scroll the whole tab
        operators = SyncTable(OPERATOR_COLUMNS, id="operators", show_cursor=False)
        operators.can_focus = False
        operators.border_title = "state operators"  # set once: setting it repaints the table
        yield operators
        sources = SyncTable(SOURCE_COLUMNS, id="sources", show_cursor=False)
        sources.can_focus = False
        sources.border_title = "sources"
        yield sources
        kafka = Static("", id="detail-kafka")
        kafka.display = False  # only for a query reading Kafka
        yield kafka
        yield Static("", id="detail-sink")
        yield AdviceSection(id="detail-advice")

    def action_scroll_right(self) -> None:
        """→: the tables (state operators, sources) show their next column (the tab itself is
        as wide as the screen)."""
        for table in self.query(SyncTable):
            table.action_cursor_right()

    def action_scroll_left(self) -> None:
        """←: the tables show their previous column."""
        for table in self.query(SyncTable):
            table.action_cursor_left()

    def draw_charts(self, history: SampleHistory, width: int) -> None:
        """The charts of the newest samples that fit ``width`` columns; the watermark-gap,
        state and offsets-behind-latest charts only for a query that has a watermark / state
        operators / a Kafka source."""
        hist = history[-max(16, 2 * width):]
        times = [s.timestamp_ms for s in hist]
        self.query_one("#chart-rates", TimelineChart).set_series([
            ("input", times, [s.input_rps for s in hist], 33),
            ("processed", times, [s.processed_rps for s in hist], 40),
        ])
        self.query_one("#chart-durations", StackedBars).set_rows([s.durations for s in hist],
                                                                 [s.batch_id for s in hist])
        gaps = [None if s.watermark_gap_ms is None else s.watermark_gap_ms / 1000 for s in hist]
        wm = self.query_one("#chart-wm", TimelineChart)
        wm.set_series([("gap", times, gaps, 170)])
        wm.display = any(g is not None for g in gaps)
        state = self.query_one("#chart-state", TimelineChart)
        memory = [s.state_memory_bytes for s in hist]
        top = max((m for m in memory if m is not None), default=0)
        state.right_unit, scale = ("MiB", 2**20) if top >= 2**20 else ("KiB", 2**10)
        state.set_series([
            ("rows", times, [None if s.state_rows is None else float(s.state_rows) for s in hist], 208),
            ("memory", times, [None if m is None else m / scale for m in memory], 44),
        ])
        state.display = any(s.state_rows is not None for s in hist)
        behind = self.query_one("#chart-kafka-behind", TimelineChart)
        b = [s.offsets_behind for s in hist]
        behind.set_series([
            ("max", times, [None if x is None else float(x.max) for x in b], 160),
            ("avg", times, [None if x is None else x.avg for x in b], 220),
            ("min", times, [None if x is None else float(x.min) for x in b], 40),
        ])
        behind.display = any(x is not None for x in b)

    def draw(self, model: DashboardModel) -> None:
        row = model.selected_row
        if row is None:
            self._put(self.query_one("#detail-head", Static), "select a query in the queries view (enter)")
            return
        self._draw_head(model, row)
        self._draw_failure(row)
        if row.name != self.shown:  # another query: its charts, not the last one's, or blank
            for chart in self.query(Chart):
                chart.forget()
        self.draw_charts(row.history, max(20, self.app.size.width - 4))
        p = row.last_progress
        self._draw_tables(p)
        kafka = self.query_one("#detail-kafka", Static)
        self._put(kafka, kafka_lag_text(model.kafka_lag.get(row.name)))
        kafka.display = row.name in model.kafka_lag
        sink = self.query_one("#detail-sink", Static)
        if p and p.sink:
            rows_out = "unknown" if p.sink.num_output_rows < 0 else f"{p.sink.num_output_rows:,}"
            self._put(sink, Text(f"sink {p.sink.description[:80]} · last batch wrote {rows_out} rows"))
        else:
            self._put(sink, "sink: no batch yet")
        self.query_one(AdviceSection).follow(row.name)
        self.shown = row.name

    def _draw_head(self, model: DashboardModel, row: QueryRow) -> None:
        """The query's name, status and diagnosis, batch, trigger, output mode and row counts, and
        — once its checkpoint was scanned — its health over the sliding window with the reason
        (:mod:`streamwatch.analysis.dashboard_health`: the verdict ``watch`` judges, kept from
        frame to frame until its inputs change)."""
        diagnosis = model.diagnoses.get(row.name)
        trigger = model.trigger_label(row.name)
        mode = model.output_mode_of(row.name)
        t = Text()
        t.append(row.name, style="bold")
        t.append(f"  {row.status}")
        if diagnosis is not None:
            style = {"ok": "green", "waiting": "cyan", "slow": "yellow", "stuck": "bold red",
                     "failed": "bold red"}.get(diagnosis.code, "")
            t.append(f"  {diagnosis.text}", style=style)
        t.append(f"\nbatch {fmt.count(row.batch_id)} · trigger {trigger} · output mode {mode} · "
                 f"{fmt.count(row.progress_count)} progress updates (kept {len(row.history):,}) · "
                 f"rows in {fmt.count(row.total_input_rows)} · out {'unknown' if row.total_output_rows is None else fmt.count(row.total_output_rows)}")
        if row.name in model.checkpoints or row.name in model.cp_errors:  # scanned: its health can be judged
            verdict = model.health.verdict_of(model, row.name)  # judged again only on new input
            t.append(f"\nhealth {verdict.health.value}", style=HEALTH_STYLES.get(verdict.health, ""))
            t.append(f": {verdict.reason}")
        if row.note:
            t.append(f"\n{row.status}: {row.note}", style="cyan" if row.status == "queued" else "yellow")
        if row.query_id:
            t.append(f"\nid {row.query_id} · run {row.run_id}", style="dim")
        self._put(self.query_one("#detail-head", Static), t)

    def _draw_failure(self, row: QueryRow) -> None:
        """A failed query's failing batch and exception; a stopped one's exception Spark raised."""
        failure = self.query_one("#detail-failure", Static)
        if row.status == "failed":
            batch = f"failing batch {row.failed_batch_id}" if row.failed_batch_id is not None else "failed"
            cls = f" [{row.error_class}]" if row.error_class else ""
            self._put(failure, Text(f"{batch}{cls}\n{(row.exception or '').strip()[:2000]}"))
            failure.display = True
        elif row.status == "stopped" and row.stop_requested and row.exception:
            self._put(failure, Text(fmt.stopped(row.exception), style="yellow"))
            failure.display = True
        else:
            self._put(failure, "")
            failure.display = False

    def _draw_tables(self, p: QueryProgress | None) -> None:
        """The state operators and sources of the last progress (``p``; None: none yet)."""
        ops = self.query_one("#operators", SyncTable)
        ops.sync([
            (f"{i}", (o.operator_name, fmt.count(o.num_rows_total), fmt.count(o.num_rows_updated),
                      fmt.count(o.num_rows_removed), fmt.count(o.num_rows_dropped_by_watermark),
                      fmt.size(o.memory_used_bytes),
                      _custom_metrics(o.custom_metrics)))
            for i, o in enumerate(p.state_operators if p else ())
        ])
        ops.display = bool(p and p.state_operators)
        srcs = self.query_one("#sources", SyncTable)
        srcs.sync([
            (f"{i}", (s.description[:40], s.start_offset or "-", s.end_offset or "-", s.latest_offset or "-",
                      fmt.count(s.num_input_rows), fmt.rate(s.input_rows_per_second),
                      ", ".join(f"{k}={v}" for k, v in sorted(s.metrics.items()))[:80]))
            for i, s in enumerate(p.sources if p else ())
        ])

    def _put(self, box: Static, content: str | Text) -> None:
        """``box.update(content)`` unless it shows that already: an update lays out the whole
        screen again (Textual), and most of the detail's text is unchanged from frame to frame."""
        if self._texts.get(box.id or "") != content:
            self._texts[box.id or ""] = content
            box.update(content)

    def defer_charts(self) -> None:
        """No chart is built in the paint that shows this tab (its text and tables come
        first; the charts follow, one per paint)."""
        for chart in self.query(Chart):
            chart.defer()

    @property
    def charts_pending(self) -> bool:
        """Some chart of the shown query is still to be built (one is built per paint)."""
        return any(chart.pending for chart in self.query(Chart))


def kafka_lag_text(lag: KafkaLag | None) -> Text:
    """Consumer lag per topic-partition (broker latest − the last committed batch's offset)."""
    t = Text()
    if lag is None:
        return t
    behind = "" if lag.lag_s is None else f", {fmt.duration(int(lag.lag_s * 1000))} behind"
    t.append(f"Kafka consumer lag {fmt.count(lag.total)} records{behind} (broker {lag.bootstrap}; "
             "latest − last committed batch)", style="bold")
    for p in lag.partitions:
        lost = "  DATA LOST (below earliest retained offset)" if p.data_lost else ""
        oldest = (f" · oldest unread {fmt.duration(max(0, lag.at_ms - p.oldest_unread_ms))} old"
                  if p.lag and p.oldest_unread_ms is not None else "")
        t.append(f"\n  {p.topic}-{p.partition}: committed {fmt.count(p.committed)} · latest {p.latest:,} · "
                 f"earliest {p.earliest:,} · lag {fmt.count(p.lag)}{oldest}{lost}", style="red" if lost else "")
    if lag.error:
        t.append(f"\n  not measured now: {lag.error}", style="yellow")
    return t


#: transformWithState's own customMetrics (state variables, timers, TTL) come first in the
#: operators table, before the state store's (``rocksdb…``)
_TWS_WORDS = ("StateVars", "Timers", "TTL")


def _custom_metrics(metrics: Mapping[str, int], width: int = 120) -> str:
    """Non-zero ``customMetrics`` as ``name=value`` text: transformWithState's in full, then
    the state store's, the whole cut at ``width`` characters (never inside the former)."""
    first = sorted(k for k in metrics if any(w in k for w in _TWS_WORDS) and metrics[k])
    rest = sorted(k for k in metrics if k not in first and metrics[k])
    head = ", ".join(f"{k}={metrics[k]:,}" for k in first)
    text = ", ".join(f"{k}={metrics[k]:,}" for k in first + rest)
    return text[:max(width, len(head))]
