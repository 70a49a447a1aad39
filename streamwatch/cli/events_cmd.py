"""``streamwatch events``: a Spark event log or a recording → streamwatch JSONL or a summary."""

from __future__ import annotations

from pathlib import Path

import click

from streamwatch.errors import Unreadable, one_line
from streamwatch.model.timefmt import utc_text

EPILOG = """\b
Examples:
  streamwatch events /tmp/spark-events/eventlog_v2_local-1795212358589
  streamwatch events app-2026.lz4 --json > app.jsonl      convert to streamwatch JSONL
  streamwatch events recording.jsonl                       queries, batches, rows, time span
\b
Reads Spark event logs (plain, .gz, .zstd, .lz4; rolling eventlog_v2_* folders) and
streamwatch recordings.
\b
Exit codes:
  0  SOURCE was read (skipped lines and legacy events are said on stderr)
  2  bad option
  4  SOURCE is missing, unreadable, neither a recording nor an event log, or compressed with an unsupported codec; or --out cannot be written
"""


def _when(ms: int | None) -> str:
    return utc_text(ms) or "-"


@click.command("events", epilog=EPILOG)
@click.argument("source")
@click.option("--json", "as_json", is_flag=True, help="Write streamwatch JSONL (schema v1) instead of the summary.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="With --json: write to FILE instead of stdout.")
def events(source: str, as_json: bool, out: Path | None) -> None:
    """Read SOURCE — a Spark event log (file or eventlog_v2_* folder) or a
    streamwatch recording, a local path or an fsspec URL (s3://…) — and print a per-query summary (queries, runs,
    batches, input rows, time span), or with --json convert it to streamwatch
    JSONL: one header line (app, redacted Spark conf), then one line per
    listener event. Spark 2.0.x streaming events are reported as unsupported.
    An unreadable SOURCE is one line on stderr and exit 4 (the command group's handler).
    """
    from streamwatch.events.jsonl import JsonlRecorder, RecordingHeader
    from streamwatch.events.reader import ReadReport, read_events
    from streamwatch.events.summary import summarize

    report = ReadReport()
    it = read_events(source, report)
    if as_json:
        first = next(it, None)  # reading the first event fills report.header
        header = report.header or RecordingHeader(time_ms=0, source="eventlog")
        try:
            rec = JsonlRecorder(out, header=header, flush_every=1000)
        except OSError as e:
            raise Unreadable(f"cannot write {out}: {e.strerror or e}") from e
        with rec:
            if first is not None:
                rec.write(first)
                for obj in it:
                    rec.write(obj)
        summary = None
    else:
        summary = summarize(it)
    if report.bad_lines:
        click.echo(f"streamwatch events: skipped {report.bad_lines} unreadable lines "
                   f"(first: {report.problems[0]})", err=True)
    if report.unsupported:
        click.echo(f"streamwatch events: {report.unsupported} unsupported legacy streaming events "
                   "(Spark 2.0.x listener classes; Spark itself skips them)", err=True)
    if summary is None:
        return
    h = report.header
    if h is not None and h.app:
        facts = " · ".join(f"{k} {v}" for k, v in h.app.items() if v)
        click.echo(f"{source.rstrip('/').rsplit('/', 1)[-1]}: {facts}")
    rows = [("query", "id", "runs", "batches", "input rows", "first event (UTC)", "span s", "failures")]
    for q in summary.queries.values():
        span = q.span_s
        rows.append((q.name or "-", q.id[:8], str(len(q.runs)), f"{q.batches:,}", f"{q.input_rows:,}",
                     _when(q.first_ms), "-" if span is None else f"{span:,.1f}", str(q.failures)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        click.echo("  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))).rstrip())
    click.echo(f"{len(summary.queries)} queries, {summary.events:,} events"
               + (f", {summary.unsupported} unsupported" if summary.unsupported else ""))
    for q in summary.queries.values():
        if q.last_exception:
            click.echo(f"{q.name or q.id}: failed: {one_line(q.last_exception)}")
