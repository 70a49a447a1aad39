"""Pipeline tab: the watched queries drawn as a DAG (bronze → silver → gold, fan-in and
fan-out), each layer a box with its batch, status, layer latency and end-to-end latency,
each incoming edge with its backlog (files/bytes written upstream, not yet read); the slowest
layer is marked. Draws itself from :class:`~streamwatch.analysis.pipeview.PipelineGraph`
(``model.pipeline``); :func:`draw_graph` is the drawing, as plain characters plus styles."""

from __future__ import annotations

import dataclasses

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import ScrollableContainer
from textual.reactive import reactive
from textual.widgets import Static

from streamwatch.analysis import fmt
from streamwatch.analysis.dashboard import DashboardModel
from streamwatch.analysis.pipeview import Layer, Link, PipelineGraph

GAP = 8  # columns between boxes (the edges run here: 4 tracks, then the arrow)
MIN_BOX, MAX_BOX = 26, 36
UP, DOWN, LEFT, RIGHT = 1, 2, 4, 8
LINES = {RIGHT | LEFT: "─", UP | DOWN: "│", DOWN | RIGHT: "┌", DOWN | LEFT: "┐", UP | RIGHT: "└", UP | LEFT: "┘",
         UP | DOWN | RIGHT: "├", UP | DOWN | LEFT: "┤", LEFT | RIGHT | DOWN: "┬", LEFT | RIGHT | UP: "┴",
         UP | DOWN | LEFT | RIGHT: "┼", LEFT: "─", RIGHT: "─", UP: "│", DOWN: "│"}
STATUS_STYLE = {"stuck": "bold red", "idle": "cyan", "active": "green", "not started": "dim", "starting": "dim"}


def _ms(ms: int | None) -> str:
    if ms is None:
        return "-"
    return f"{ms} ms" if ms < 1000 else f"{ms / 1000:.1f} s" if ms < 600_000 else f"{ms / 60_000:.0f} min"


def _size(n: int | None) -> str:
    if n is None:
        return "? B"
    if n < 1024:
        return f"{n} B"
    size = float(n)
    for unit in ("KiB", "MiB", "GiB"):
        size /= 1024
        if size < 1024 or unit == "GiB":
            break
    return f"{size:.1f} {unit}"


def short_names(names: list[str]) -> dict[str, str]:
    """Names without the prefix they all share (``flights_bronze`` → ``bronze``)."""
    prefix = names[0].split("_", 1)[0] + "_" if names and "_" in names[0] else ""
    if prefix and all(n.startswith(prefix) and len(n) > len(prefix) for n in names):
        return {n: n[len(prefix):] for n in names}
    return {n: n for n in names}


def backlog_text(e: Link) -> str:
    if not e.learnt:
        return "no batch yet"
    if e.backlog_versions is not None:
        return f"{fmt.count(e.backlog_versions)} version(s), {fmt.count(e.backlog_files)} file(s)"
    return f"{fmt.count(e.backlog_files)} file(s) {_size(e.backlog_bytes)}"


def box_lines(lay: Layer, incoming: list[Link], short: dict[str, str]) -> list[tuple[str, str]]:
    """(text, style) of the lines inside one layer's box."""
    state = lay.status
    if lay.status == "stuck" and lay.in_flight_batch_id is not None:
        state = f"stuck: batch {lay.in_flight_batch_id} {_ms(int((lay.in_flight_s or 0) * 1000))}"
    elif lay.in_flight_batch_id is not None:
        state = f"batch {lay.in_flight_batch_id} running"
    out = [(f"batch {fmt.count(lay.batch_id)} · {state}", STATUS_STYLE.get(lay.status, ""))]
    out.append((f"layer {_ms(lay.layer_latency_ms)} · e2e {_ms(lay.end_to_end_ms)}", "bold red" if lay.slowest else ""))
    if lay.landing_unread is not None:
        out.append((f"← landing: {fmt.count(lay.landing_unread)} file(s) unread", "yellow" if lay.landing_unread else ""))
    for e in incoming:
        behind = (e.backlog_files or 0) > 0 or (e.backlog_versions or 0) > 0
        out.append((f"← {short[e.upstream]}: {backlog_text(e)}", "yellow" if behind else "dim" if not e.learnt else ""))
    return out


class Canvas:
    """A grid of characters with styles; lines merge into box-drawing junctions."""

    def __init__(self, width: int, height: int) -> None:
        self.w, self.h = width, height
        self.chars = [[" "] * width for _ in range(height)]
        self.styles = [[""] * width for _ in range(height)]
        self.dirs = [[0] * width for _ in range(height)]
        self.line_style = [[""] * width for _ in range(height)]

    def put(self, x: int, y: int, text: str, style: str = "") -> None:
        for i, ch in enumerate(text):
            if 0 <= x + i < self.w and 0 <= y < self.h:
                self.chars[y][x + i] = ch
                self.styles[y][x + i] = style

    def _dir(self, x: int, y: int, d: int, style: str) -> None:
        if 0 <= x < self.w and 0 <= y < self.h:
            self.dirs[y][x] |= d
            if style or not self.line_style[y][x]:
                self.line_style[y][x] = style or self.line_style[y][x]

    def hline(self, x1: int, x2: int, y: int, style: str = "") -> None:
        a, b = min(x1, x2), max(x1, x2)
        for x in range(a, b):
            self._dir(x, y, RIGHT, style)
            self._dir(x + 1, y, LEFT, style)

    def vline(self, x: int, y1: int, y2: int, style: str = "") -> None:
        a, b = min(y1, y2), max(y1, y2)
        for y in range(a, b):
            self._dir(x, y, DOWN, style)
            self._dir(x, y + 1, UP, style)

    def text(self) -> Text:
        out = Text()
        for y in range(self.h):
            if y:
                out.append("\n")
            for x in range(self.w):
                if self.dirs[y][x] and self.chars[y][x] == " ":
                    out.append(LINES.get(self.dirs[y][x], "┼"), self.line_style[y][x])
                else:
                    out.append(self.chars[y][x], self.styles[y][x])
        out.rstrip()
        return out


def _fit(text: str, room: int) -> str:
    """``text`` cut to ``room`` characters, its last one ``…`` when cut."""
    return text if len(text) <= room else text[: max(0, room - 1)] + "…"


def _title(lay: Layer) -> str:
    return f" {lay.name} " + ("◆ slowest " if lay.slowest else "")


def _box(canvas: Canvas, lay: Layer, lines: list[tuple[str, str]], x: int, y: int, bw: int) -> None:
    """One layer's box at (``x``, ``y``), ``bw`` wide, around ``lines``."""
    border = "bold red" if lay.slowest else "red" if lay.status == "stuck" else ""
    title = _fit(_title(lay), bw - 3)
    canvas.put(x, y, "┌" + title.ljust(bw - 2, "─") + "┐", border)
    canvas.put(x + 1, y, title, "bold " + border if border else "bold")
    for i, (t, style) in enumerate(lines):
        canvas.put(x, y + 1 + i, "│", border)
        canvas.put(x + 2, y + 1 + i, _fit(t, bw - 4), style)
        canvas.put(x + bw - 1, y + 1 + i, "│", border)
    canvas.put(x, y + 1 + len(lines), "└" + "─" * (bw - 2) + "┘", border)


def box_width(g: PipelineGraph, short: dict[str, str]) -> int:
    """The width (cells) a box needs to show its title and every line whole."""
    lines = max(len(t) for lay in g.layers for t, _ in box_lines(lay, g.incoming(lay.name), short)) + 4
    return max(MIN_BOX, lines, max(len(_title(lay)) + 3 for lay in g.layers))


def draw_graph(g: PipelineGraph, width: int = 120) -> Text:
    """The pipeline as box-and-arrow text in ``width`` columns: its stages (columns of the DAG)
    side by side with the arrows between them where they fit, else one stage under the other
    (:func:`draw_stacked`). A box is never cut: it is as wide as its longest line (only a
    line wider than ``width`` itself is cut, with ``…``)."""
    if not g.layers:
        return Text("no queries to draw", style="dim")
    short = short_names([lay.name for lay in g.layers])
    cols = g.columns
    need = box_width(g, short)
    bw = max(need, min(MAX_BOX, (width - GAP * (cols - 1)) // cols))
    if cols > 1 and cols * bw + GAP * (cols - 1) > width:
        return draw_stacked(g, width, short)
    boxes: dict[str, tuple[int, int, int]] = {}  # name → (x, y, height)
    bottom = 0
    for c in range(cols):
        y = 0
        for lay in (lay for lay in g.layers if lay.column == c):
            h = 2 + len(box_lines(lay, g.incoming(lay.name), short))
            boxes[lay.name] = (c * (bw + GAP), y, h)
            y += h + 1
        bottom = max(bottom, y)
    # each upstream of a column turns down its own vertical track in the gap after it
    senders = [lay.name for lay in g.layers if any(e.upstream == lay.name for e in g.links)]
    tracks = {n: sum(1 for m in senders[:i] if g.layer(m).column == g.layer(n).column) for i, n in enumerate(senders)}
    lanes = [e for e in g.links if g.layer(e.downstream).column - g.layer(e.upstream).column != 1]
    canvas = Canvas(cols * (bw + GAP) - GAP, bottom + len(lanes) + 1)
    for lay in g.layers:
        x, y, h = boxes[lay.name]
        _box(canvas, lay, box_lines(lay, g.incoming(lay.name), short), x, y, bw)
    for e in sorted(g.links, key=lambda e: (boxes[e.upstream][1], boxes[e.downstream][1])):
        ux, uy, _ = boxes[e.upstream]
        dx, dy, _ = boxes[e.downstream]
        style = "yellow" if (e.backlog_files or 0) > 0 or (e.backlog_versions or 0) > 0 else "dim" if not e.learnt else ""
        sx, sy, ex, ey = ux + bw, uy + 1, dx - 2, dy + 1
        out_x, in_x = ux + bw + 1 + tracks[e.upstream] % (GAP - 4), dx - 3
        if e in lanes:  # over more than one column: down to a lane under every box, along it, up
            ly = bottom + lanes.index(e)
            canvas.hline(sx, out_x, sy, style)
            canvas.vline(out_x, sy, ly, style)
            canvas.hline(out_x, in_x, ly, style)
            canvas.vline(in_x, ly, ey, style)
        else:
            canvas.hline(sx, out_x, sy, style)
            canvas.vline(out_x, sy, ey, style)
            in_x = out_x
        canvas.hline(in_x, ex, ey, style)
        canvas.put(ex + 1, ey, "▶", style)
    return canvas.text()


def draw_stacked(g: PipelineGraph, width: int, short: dict[str, str] | None = None) -> Text:
    """The pipeline for a screen narrower than its stages side by side: each stage (a column of
    the DAG) is a row of boxes (as many side by side as ``width`` holds), the stage it feeds
    below it after a ``▼`` line; each box names its upstreams and their backlog (``← silver:
    …``), so every edge is read in the box it leads to."""
    short = short or short_names([lay.name for lay in g.layers])
    bw = min(box_width(g, short), max(MIN_BOX, width))
    per_row = max(1, (width + 2) // (bw + 2))
    placed: list[tuple[Layer, list[tuple[str, str]], int, int]] = []
    y = 0
    for c in range(g.columns):
        members = [lay for lay in g.layers if lay.column == c]
        if c:
            y += 1  # the ▼ line
        for start in range(0, len(members), per_row):
            row = members[start:start + per_row]
            height = 0
            for i, lay in enumerate(row):
                lines = box_lines(lay, g.incoming(lay.name), short)
                placed.append((lay, lines, i * (bw + 2), y))
                height = max(height, 2 + len(lines))
            y += height
    canvas = Canvas(min(per_row, max(1, len(g.layers))) * (bw + 2) - 2, y)
    arrows = {py - 1 for lay, _, _, py in placed if lay.column and py}
    for lay, lines, x, top in placed:
        _box(canvas, lay, lines, x, top, bw)
    for ay in sorted(arrows):
        if not any(top == ay for _, _, _, top in placed):
            canvas.put(2, ay, "▼ reads the stage above", "dim")
    return canvas.text()


def summary(g: PipelineGraph) -> Text:
    """The line above the drawing: layers, edges, total backlog, slowest, end-to-end."""
    t = Text()
    files = sum(e.backlog_files or 0 for e in g.links if e.learnt)
    t.append(f"{len(g.layers)} layer(s) · {len(g.links)} edge(s) · backlog {fmt.count(files)} file(s)")
    if g.end_to_end_ms is not None:
        t.append(f" · end-to-end {_ms(g.end_to_end_ms)}")
    if g.slowest:
        t.append(f" · slowest {g.slowest}", style="bold red")
    return t


class PipelineView(ScrollableContainer):
    """The model's pipeline graph (``show(model)``); ``model.pipeline`` None: not known yet.
    Drawn for its width (again on a resize); it scrolls with ↑ ↓ ← → pgup pgdn home end."""

    DEFAULT_CSS = """
    PipelineView > Static { width: auto; height: auto; }
    #pipe-head { padding: 0 1; width: 100%; }
    #pipe-graph { padding: 1 1 0 1; }
    #pipe-legend { padding: 1 1 0 1; color: $text-muted; width: 100%; }
    """

    model: reactive[DashboardModel | None] = reactive(None, always_update=True, repaint=False, init=False)

    def compose(self) -> ComposeResult:
        yield Static("pipeline: waiting for the first checkpoint poll", id="pipe-head")
        yield Static("", id="pipe-graph")
        yield Static("← upstream: backlog = files (bytes) written upstream, not yet read by this layer · "
                     "layer = median input-written → commit · e2e = landed file → this layer's commit · "
                     "◆ slowest layer", id="pipe-legend")

    def show(self, model: DashboardModel) -> None:
        self.model = model

    def watch_model(self) -> None:
        if self.model is not None:
            self.draw(self.model)

    def on_resize(self, _: events.Resize) -> None:
        """Drawn again for the new width (stages side by side, or one under the other)."""
        self.watch_model()

    def draw(self, model: DashboardModel) -> None:
        g = model.pipeline
        if g is None:
            return
        unread = model.query_backlog()  # the landing tab's count: files landed, not read yet
        if any(unread.get(lay.name) is not None for lay in g.layers):
            g = dataclasses.replace(g, layers=tuple(dataclasses.replace(lay, landing_unread=unread.get(lay.name))
                                                    for lay in g.layers))
        self.query_one("#pipe-head", Static).update(summary(g))
        width = max(MIN_BOX, (self.size.width or self.app.size.width) - 4)
        self.query_one("#pipe-graph", Static).update(draw_graph(g, width))
