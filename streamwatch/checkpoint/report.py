"""Human-readable renderings of a checkpoint for ``streamwatch inspect`` (rich renderables).

Imported only by the CLI; the reader itself never imports rich.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from streamwatch.checkpoint.jsonout import redact
from streamwatch.model.batchlogs import CommitSink
from streamwatch.model.checkpoint import BatchRow, Checkpoint, CompactibleLog, StateOperator
from streamwatch.model.sourcebatches import log_at
from streamwatch.model.timefmt import utc_text

if TYPE_CHECKING:
    from streamwatch.checkpoint.fleet import FleetRow

STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def _t(ms: int | None) -> str:
    return _fmt(ms, "%Y-%m-%d %H:%M:%S UTC")


def _short(ms: int | None) -> str:
    return _fmt(ms, "%Y-%m-%d %H:%M:%S")


def _fmt(ms: int | None, pattern: str) -> str:
    """Epoch ms as UTC text; ``-`` for None, the raw number when outside the years 1–9999."""
    if ms is None:
        return "-"
    return utc_text(ms, pattern) or f"{ms} ms (out of range)"


def _n(v: object) -> str:
    return "-" if v is None else str(v)


def duration_text(ms: int | float | None, *, signed: bool = False) -> str:
    """A duration in ms as people read it, in the units ``age_text`` uses: ``850 ms``, ``9 s``,
    ``1.5 s``, ``60 s`` (seconds below 2 min), ``5 min 30 s``, ``3 h 20 min``, ``17 d 5 h``
    (the smaller unit truncated, dropped when 0; days with thousands separators); with
    ``signed`` a leading ``+`` or ``-`` (``-60 s``; ``0 ms`` has none); ``-`` for None."""
    if ms is None:
        return "-"
    a = abs(ms)
    shown = a >= 1 if a < 1000 else True  # a sign on "0 ms" would claim a direction
    sign = ("-" if ms < 0 else "+" if signed else "") if shown else ""
    if a < 1000:
        return f"{sign}{int(a)} ms"
    if a < 120_000:  # seconds, truncated to one decimal shown only when there is one ("1.5 s", "60 s")
        return f"{sign}{int(a // 100) / 10:,.1f}".removesuffix(".0") + " s"
    s = int(a // 1000)
    if s < 2 * 3600:
        big, n, small, rest = "min", s // 60, "s", s % 60
    elif s < 2 * 86400:
        big, n, small, rest = "h", s // 3600, "min", s % 3600 // 60
    else:
        big, n, small, rest = "d", s // 86400, "h", s % 86400 // 3600
    return f"{sign}{n:,} {big}" + (f" {rest} {small}" if rest else "")


def _bytes(n: int | None) -> str:
    if n is None:
        return "- (--sizes)"
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return str(size)


def _interval_text(log: CompactibleLog) -> str:
    """A compactible log's interval as read: ``10``, ``10 (Spark's default)``, ``5 (conf)``,
    ``-`` when unknown."""
    if log.compact_interval is None:
        return "-"
    return {"default": f"{log.compact_interval} (Spark's default)", "conf": f"{log.compact_interval} (conf)"}.get(
        log.compact_interval_source, str(log.compact_interval))


def _changelog_text(cp: Checkpoint, provider: str) -> str:
    """``, changelog checkpointing on/off`` for a RocksDB store, from its files: Spark does not
    record the setting in the offsets log, but with it on every version between snapshots is a
    ``N.changelog`` (off: every version a ``N.zip``); nothing for other stores or no versions."""
    if "RocksDB" not in provider:
        return ""
    parts = [p for op in cp.state for p in op.partitions if p.versions]
    if not parts:
        return ""
    on = any(set(p.versions) - set(p.snapshot_versions) for p in parts)
    return f", changelog checkpointing {'on' if on else 'off'}"


def findings_table(cp: Checkpoint) -> Table | Text:
    if not cp.findings:
        return Text("findings: none — the checkpoint looks healthy", style="green")
    t = Table("severity", "code", "finding", title="findings", title_justify="left", expand=False)
    order = {"error": 0, "warning": 1, "info": 2}
    for f in sorted(cp.findings, key=lambda f: order[f.severity]):
        t.add_row(Text(f.severity, style=STYLE[f.severity]), f.code, f.message)
    return t


def summary(cp: Checkpoint) -> Group:
    """Query id, batches, watermark, sources, sink, state operators, findings."""
    parts: list[RenderableType] = [_head(cp)]
    # Kept verbatim for scripts written against the first inspect.
    parts.append(Text(f"latest batch (offsets) {_n(cp.latest_batch_id)}"))
    parts.append(Text(f"last committed batch   {_n(cp.last_committed_batch_id)}"))
    sources = _sources_table(cp)
    if sources is not None:
        parts.append(sources)
    parts.append(_sink_line(cp))
    parts += _state_parts(cp)
    parts.append(findings_table(cp))
    return Group(*parts)


def _head(cp: Checkpoint) -> Table:
    """The grid of names and values at the top: path, query id, batches, watermark, conf,
    repartitions, checkpoint format."""
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    latest = cp.latest_offsets
    head.add_row("checkpoint", cp.path)
    head.add_row("query id", cp.query_id or "- (no metadata file)")
    first = cp.offset_batch_ids[0] if cp.offset_batch_ids else None
    head.add_row("batches", f"{_n(first)} … {_n(cp.latest_batch_id)} in offsets/ ({len(cp.offset_batch_ids)} files), {len(cp.commit_batch_ids)} in commits/")
    head.add_row("in flight", f"batch {cp.in_flight_batch_id} (planned, not committed: re-run on restart)" if cp.in_flight_batch_id is not None else "none")
    if latest is not None:
        wm = latest.watermark_ms
        head.add_row("watermark", f"{_t(wm)}  ({wm} ms)" if wm else "none (0: no watermark, or no event time yet)")
        head.add_row("last trigger", _t(latest.timestamp_ms))
        sp = latest.conf.get("spark.sql.shuffle.partitions")
        provider = latest.conf.get("spark.sql.streaming.stateStore.providerClass", "").rsplit(".", 1)[-1]
        head.add_row("conf", f"shuffle partitions {sp or '- (not recorded)'}" + (f", state store {provider}" if provider else "")
                     + _changelog_text(cp, provider) + f", offsets log v{latest.version}")
    for r in cp.repartitions:
        head.add_row("repartition", f"batch {r.batch_id}: offline state repartition {r.from_partitions} → {r.to_partitions} partitions (no input read)")
    if cp.commits:
        head.add_row("checkpoint format", _format_text(cp))
    return head


def _format_text(cp: Checkpoint) -> str:
    """The state checkpoint format of the last commit (``cp.commits`` not empty), the unique
    ids checked against the state files, and where the format switched."""
    last = cp.commits[-1]
    # a v3 commit log (named sink) is no checkpoint format of its own: format 1 or 2 by its ids
    fmt = f"v{last.checkpoint_format}" + (f" (commit log v{last.version})" if last.version != last.checkpoint_format else "")
    switches = [f"v{a.checkpoint_format}→v{c.checkpoint_format} at batch {c.batch_id}"
                for a, c in pairwise(cp.commits) if a.checkpoint_format != c.checkpoint_format]
    checked = [m for m in cp.unique_ids if m.checked]
    if checked:
        fmt += f", state unique ids: {sum(m.found for m in checked)}/{sum(m.named for m in checked)} named files present over {len(checked)} commits"
    return fmt + (f" ({', '.join(switches)})" if switches else "")


def _sources_table(cp: Checkpoint) -> Table | None:
    """The sources of the latest offsets: kind, latest offset and the file source's log;
    None when there are none."""
    latest = cp.latest_offsets
    if latest is None or not latest.sources:
        return None
    t = Table("source", "kind", "latest offset", "log", title="sources", title_justify="left")
    for i, (sid, raw, p) in enumerate(zip(latest.source_ids, latest.sources, latest.parsed, strict=True)):
        log = log_at(cp.sources, latest, i)
        logtxt = ""
        if log is not None:
            logtxt = f"sources/{log.name}: {log.entry_count} files, own log batches ≤ {_n(log.latest_batch_id)}"
            if log.compact_interval:
                logtxt += f", compact every {_interval_text(log)}"
        t.add_row(sid, p.kind if p else "-", raw or "-", logtxt)
    return t


def _sink_line(cp: Checkpoint) -> Text:
    """The sink: the file sink's log, the Delta table's last txn, the sink named in the last
    commit, or not known."""
    named = cp.commits[-1].active_sink if cp.commits else None
    tag = f"{sink_text(named)}: " if named is not None else ""
    if cp.sink is not None:
        s = cp.sink
        return Text(f"sink: {tag}file sink {cp.sink_path} — _spark_metadata up to batch {_n(s.latest_batch_id)}, "
                    f"{s.entry_count} entries, compact every {_interval_text(s)}")
    if cp.delta_sink is not None:
        d = cp.delta_sink
        txn = d.last_txn
        mine = " (this query)" if txn and txn[0] == cp.query_id else ""
        return Text(f"sink: {tag}Delta table {cp.sink_path} — version {_n(d.latest_version)}, last txn "
                    f"{txn[0] + ' batch ' + str(txn[1]) + mine if txn else '-'}")
    if named is not None:
        return Text(f"sink: {sink_text(named)} (named in commits/{cp.commits[-1].batch_id}; its output not read: "
                    "pass --sink DIR for a file or Delta sink)")
    return Text("sink: not known (pass --sink DIR for a file or Delta sink)", style="dim")


def _state_parts(cp: Checkpoint) -> list[RenderableType]:
    """The state operators table and each operator's state variables, or a line saying the
    query is stateless."""
    if not cp.state:
        return [Text("state: none (stateless query)", style="dim")]
    t = Table("op", "name", "store", "stores", "partitions", "versions", "bytes", "metadata", title="state operators", title_justify="left")
    for op in cp.state:
        v = op.any_versions
        t.add_row(
            str(op.operator_id),
            op.name or "-",
            op.provider,
            ", ".join(op.store_names) or "-",
            str(op.num_partitions),
            f"{v[0]}–{v[-1]}" if v else "-",
            _bytes(op.bytes),
            f"v{op.metadata_version}" if op.metadata_version else "-",
        )
    return [t, *(state_variables_text(op) for op in cp.state if op.state_variables)]


def sink_text(s: CommitSink) -> str:
    """A named sink of a v3 commit as people read it: ``totals (NoopTable, DSv2)``."""
    what = ", ".join(x for x in (s.provider_short, s.api_version) if x)
    return f"{s.name}" + (f" ({what})" if what else "")


def state_variables_text(op: StateOperator) -> Text:
    """One transformWithState operator's state variables, TTL and timers from its operator
    metadata v2 (``operatorPropertiesJson``): ``operator 0 (…, ProcessingTime mode, Append):
    session ValueState (TTL), pages ListState (TTL); processing-time timers``. Timer state
    variables are Spark's own (``$procTimers_…``/``$eventTimers_…``)."""
    mode = ", ".join(x for x in (f"{op.time_mode} mode" if op.time_mode else None, op.output_mode) if x)
    user = [v for v in op.state_variables if v.kind != "TimerState"]
    timers = [v for v in op.state_variables if v.kind == "TimerState"]
    text = Text(f"operator {op.operator_id} ({op.name or '-'}{', ' + mode if mode else ''}): state variables ")
    text.append(", ".join(f"{v.name} {v.kind}{' (TTL)' if v.ttl_enabled else ''}" for v in user) or "none", style="bold")
    kinds = sorted({"event-time" if "event" in v.name.lower() else "processing-time" for v in timers})
    text.append(f"; {' and '.join(kinds)} timers" if timers else "; no timers")
    return text


def timeline(rows: tuple[BatchRow, ...]) -> Table:
    def mark(v: bool | None) -> Text:
        return Text("·", style="dim") if v is None else Text("✓", style="green") if v else Text("✗", style="red")

    def note(r: BatchRow) -> Text:
        out = Text()
        if r.repartition is not None:
            out.append(f"repartition {r.repartition.from_partitions}→{r.repartition.to_partitions}", style="magenta")
        m = r.unique_ids
        if m is not None and m.checked:
            out.append((" " if out else "") + f"ids {m.found}/{m.named}", style="green" if not m.missing else "bold red")
        return out

    t = Table("batch", "offsets", "commit", "state", "sink", "files", "watermark (UTC)", "trigger time (UTC)", "notes", title="batches", title_justify="left")
    for r in rows:
        t.add_row(str(r.batch_id), mark(r.has_offsets), mark(r.has_commit), mark(r.state_version), mark(r.sink_entry),
                  _n(r.files_read), _short(r.watermark_ms) if r.watermark_ms else "-", _short(r.timestamp_ms), note(r))
    return t


def batch(doc: dict[str, Any]) -> Group:
    """One batch from :func:`streamwatch.checkpoint.jsonout.batch_doc`'s ``batch``."""
    b = doc["batch"]
    parts: list[RenderableType] = [Text(f"batch {b['batch_id']}", style="bold")]
    off = b["offsets"]
    if off is None:
        parts.append(Text("offsets: none (not planned, or purged)", style="yellow"))
    else:
        parts.append(Text(f"offsets: log v{off['version']}, trigger {off['timestamp'] or '-'}, watermark {off['watermark'] or '-'}"))
        t = Table("source", "kind", "offset", "as written")
        for s in off["sources"]:
            t.add_row(s["id"], s["kind"] or "-", s["summary"] or "-", s["offset"] or "-")
        parts.append(t)
    com = b["commit"]
    sinks = [CommitSink(x["name"], x["commit_offset"], x["provider"], x["api_version"], x["active"]) for x in (com or {}).get("sinks") or ()]
    parts.append(Text("commit: none — not committed" if com is None else f"commit: log v{com['version']}, nextBatchWatermarkMs {_n(com['next_watermark_ms'])}"
                      + "".join(f", sink {sink_text(x)}" + ("" if x.active else " inactive") for x in sinks)))
    m = com and com.get("unique_ids_matched")
    if m:
        parts.append(Text(f"state unique ids: {m['found']}/{m['named']} named files present"
                          + "".join(f"\n  missing: operator {x['operator_id']} partition {x['partition']} id {x['unique_id']}" for x in m["missing"]),
                          style="bold red" if m["missing"] else ""))
    if b.get("repartition"):
        r = b["repartition"]
        parts.append(Text(f"written by offline state repartition: {r['from_partitions']} → {r['to_partitions']} partitions (no input read)", style="magenta"))
    if b["files_read"] is None and b.get("source_log_batches"):
        parts.append(Text("files read: unknown (offsets of this batch or the one before are gone: "
                          "the file source's log numbers its batches itself)", style="yellow"))
    elif b["files_read"]:
        t = Table("source", "file read", "modified", "source log batch")
        for f in b["files_read"]:
            t.add_row(str(f["source"]), f["path"], _t(f["timestamp_ms"]), _n(f.get("log_batch")))
        parts.append(t)
    elif b.get("source_log_batches"):
        parts.append(Text("files read: none"))
    for s in b["state"]:
        parts.append(Text(f"state operator {s['operator_id']} ({s['name'] or '-'}): version {s['version']} in {s['partitions_with_version']}/{s['partitions']} store folders"))
    if b["sink_entries"] is not None:
        parts.append(Text(f"sink entries: {len(b['sink_entries'])}" + ("" if b["sink_entries"] else " (batch folded into a .compact file, or wrote nothing)")))
        for e in b["sink_entries"][:50]:
            parts.append(Text(f"  {e['action']} {e['path']} ({e['size']} B)"))
    if b["delta_versions"] is not None:
        parts.append(Text(f"Delta versions written: {', '.join(map(str, b['delta_versions'])) or 'none'}"))
    return Group(*parts)


def fleet_table(root: str, rows: Sequence[FleetRow]) -> Table | Text:
    """``inspect --recursive``: one row per checkpoint (``FleetRow``), worst first."""
    from streamwatch.checkpoint.fleet import age_text

    if not rows:
        return Text(f"no checkpoint under {root} (a checkpoint is a folder with offsets/ and metadata)", style="yellow")
    t = Table("checkpoint", "query", "latest", "committed", "last commit", "in flight", "state", "worst finding",
              title=f"{len(rows)} checkpoints under {root}", title_justify="left")
    base = root.rstrip("/") + "/"
    for r in rows:
        where = r.path[len(base):] if r.path.startswith(base) else r.path
        query = r.name or (r.query_id[:8] + "…" if r.query_id else "-")
        if r.error:
            worst = Text(f"unreadable: {r.error}", style="bold red")
        elif r.finding is not None:
            worst = Text(f"{r.finding.severity} {r.finding.code}: {r.finding.message}", style=STYLE[r.finding.severity])
        else:
            worst = Text("healthy", style="green")
        t.add_row(where, query, _n(r.latest_batch), _n(r.last_committed), age_text(r.last_commit_ms),
                  _n(r.in_flight), _bytes(r.state_bytes) if r.state_bytes is not None else "-", worst)
    return t


__all__ = ["batch", "duration_text", "findings_table", "fleet_table", "redact", "summary", "timeline"]
