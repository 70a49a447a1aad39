"""``streamwatch inspect PATH``: read-only checkpoint inspector with health findings, no JVM."""

from __future__ import annotations

import sys

import click

from streamwatch.errors import ExitCode

EPILOG = """\b
Examples:
  streamwatch inspect ./streamwatch-workspace/checkpoints/flights/gold
  streamwatch inspect CP --batches            offsets / commit / state / sink per batch
  streamwatch inspect CP --batch 12           one batch: offsets, files read, state, sink
  streamwatch inspect CP --sink ./out/table   also read the sink's _spark_metadata or _delta_log
  streamwatch inspect s3://bucket/cp --json   fsspec URLs work too (needs s3fs)
  streamwatch inspect CP --check || alert     exit status by worst finding
  streamwatch inspect CP --sizes              also measure state bytes (a stat per state file)
  streamwatch inspect --recursive ./streamwatch-workspace/checkpoints --check
                                              every checkpoint under a folder, worst first
  streamwatch inspect CP --kafka-bootstrap 127.0.0.1:9092
                                              consumer lag per topic-partition (broker latest
                                              − last committed batch), also while the query is
                                              down; kafka-data-lost when retention deleted
                                              records the query had not read

\b
--check exit status: 0 ok (no warnings), 1 warnings, 3 errors, 4 PATH unreadable
(2 is click's own status for a bad option; also --kafka-bootstrap on a checkpoint
without a Kafka source; 4 too when the broker does not answer). Without --check the exit status is 0
whenever PATH could be read, 4 otherwise. With --recursive, --check exits with the
worst status of all checkpoints found (4 when one could not be read). Nothing under
PATH is ever written.
"""


def _is_folder(path: str) -> bool:
    """Whether ``path`` (local or an fsspec URL) is an existing folder; False when unreadable."""
    from streamwatch.checkpoint.fs import open_storage

    try:
        storage, inner = open_storage(path)
        return storage.kind(inner) == "dir"
    except Exception:  # noqa: BLE001 - no table to show, the checkpoint is still read
        return False


def read_as_inspect(path: str, *, sink: str | None = None, full: bool = False, sizes: bool = False,
                    measure: bool = False, storage_options: dict | None = None):
    """The checkpoint at ``path`` with every finding ``streamwatch inspect PATH`` shows: the
    sink from the workspace's pipeline definition when ``sink`` is None, the reader's findings,
    the state audit's (growth, skew, restart cost). The one reading both ``inspect PATH`` and
    ``inspect --recursive`` judge by. ``sizes`` is ``--sizes`` (state bytes measured, and the
    audit budgeted by bytes: 256 MiB); ``measure`` measures bytes for display only, judging as
    ``inspect`` without ``--sizes`` does (on a local disk: no bytes, the audit budgeted by
    file count: 5,000). Raises :class:`~streamwatch.checkpoint.CheckpointError`."""
    from dataclasses import replace

    from streamwatch.checkpoint import read_checkpoint
    from streamwatch.checkpoint.fs import LocalStorage, open_storage
    from streamwatch.state.audit import with_audit_findings

    if sink is None:  # a workspace checkpoint: its table from the pipeline definition
        from streamwatch.pipeline import table_of_checkpoint

        table = table_of_checkpoint(path)
        sink = str(table) if table is not None and _is_folder(str(table)) else None
    cp = read_checkpoint(path, sink=sink, full=full, sizes=sizes or measure, storage_options=storage_options)
    judged = cp
    if measure and not sizes and any(op.bytes is not None for op in cp.state) \
            and isinstance(open_storage(path, storage_options)[0], LocalStorage):
        # bytes read for display only: without --sizes inspect has none on a local disk, so
        # its audit budgets by file count; the audit sees what inspect's would
        judged = replace(cp, state=tuple(replace(op, bytes=None) for op in cp.state))
    audited = with_audit_findings(judged, path, storage_options)  # state growth / skew / restart-cost findings
    return cp if audited is judged else replace(cp, findings=audited.findings)


def _fail(msg: str) -> None:
    click.echo(f"streamwatch inspect: {msg}", err=True)
    sys.exit(ExitCode.UNREADABLE)


def _fleet(root: str, as_json: bool, check: bool) -> None:
    """``--recursive``: every checkpoint under ROOT, one row each, worst first."""
    from streamwatch.checkpoint import CheckpointError
    from streamwatch.checkpoint.fleet import read_fleet

    if not as_json and sys.stderr.isatty():
        click.echo(f"streamwatch inspect: searching {root} for checkpoints…", err=True)
    try:  # each checkpoint judged by inspect's own reading (state bytes measured for the column)
        rows = read_fleet(root, read=lambda url: read_as_inspect(url, measure=True))
    except CheckpointError as e:
        _fail(str(e))
        return
    if as_json:
        import orjson

        from streamwatch.checkpoint.jsonout import fleet_doc

        sys.stdout.buffer.write(orjson.dumps(fleet_doc(root, rows), option=orjson.OPT_INDENT_2) + b"\n")
        sys.stdout.flush()
    else:
        from rich.console import Console

        from streamwatch.checkpoint.report import fleet_table

        Console(soft_wrap=False).print(fleet_table(root, rows))
    if check:
        worst = max((r.rank for r in rows), default=-1)
        sys.exit({3: ExitCode.UNREADABLE, 2: ExitCode.ERRORS, 1: ExitCode.WARNINGS}.get(worst, ExitCode.OK))


@click.command(epilog=EPILOG)
@click.argument("path", type=str)
@click.option("--batch", "batch_id", type=int, default=None, metavar="N", help="Show batch N in detail.")
@click.option("--batches", is_flag=True, help="Timeline: offsets N / commit N / state version N+1 / sink entry N.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (schema streamwatch.inspect/1, see README).")
@click.option("--check", is_flag=True, help="Exit status by worst finding: 0 ok, 1 warnings, 3 errors, 4 unreadable.")
@click.option("--sink", type=str, default=None, metavar="DIR", help="The sink's output folder (file sink or Delta table); discovered in a streamwatch workspace.")
@click.option("--recursive", "-r", is_flag=True, help="PATH is a ROOT: one row per checkpoint found under it, worst first.")
@click.option("--sizes", is_flag=True, help="Measure state store bytes on a local disk (one stat per file; object storage listings give them anyway).")
@click.option("--kafka-bootstrap", default=None, metavar="HOST:PORT",
              help="Ask this Kafka broker for its offsets: consumer lag per topic-partition of the checkpoint's Kafka source.")
@click.option("--spark", "spark_version", default=None, metavar="X.Y",
              help="What moving the query to Spark X.Y means for this checkpoint: can it restart, and what stops it.")
def inspect(path: str, batch_id: int | None, batches: bool, as_json: bool, check: bool, sink: str | None, recursive: bool,
            sizes: bool, kafka_bootstrap: str | None, spark_version: str | None) -> None:
    """Summarise the checkpoint at PATH without starting Spark (read-only).

    Shows the query id, batches (first, latest, last committed, in flight), the
    watermark, each source's latest offset and file log, the sink, the state
    operators and health findings (in-flight batch, gaps between offsets and
    commits, conf drift, missing or orphan state versions, unknown log versions,
    truncated files, stray files…). PATH may be a local folder or an fsspec URL.
    """
    from streamwatch.checkpoint import CheckpointError, batch_timeline, features
    from streamwatch.model.findings import worst_severity

    if batches and batch_id is not None:
        click.echo("streamwatch inspect: use --batch N or --batches, not both", err=True)
        sys.exit(ExitCode.USAGE)
    target = None
    if spark_version is not None:
        try:
            target = features.parse_line(spark_version)
        except ValueError as e:
            click.echo(f"streamwatch inspect: --spark {e}", err=True)
            sys.exit(ExitCode.USAGE)
    if recursive:
        if batches or batch_id is not None or sink or kafka_bootstrap or spark_version:
            click.echo("streamwatch inspect: --recursive shows one row per checkpoint; --batch/--batches/--sink/--kafka-bootstrap/--spark need one PATH", err=True)
            sys.exit(ExitCode.USAGE)
        _fleet(path, as_json, check)
        return
    full = batches or batch_id is not None
    try:
        cp = read_as_inspect(path, sink=sink, full=full, sizes=sizes)
    except CheckpointError as e:
        _fail(str(e))
        return
    except Exception as e:  # noqa: BLE001 - never a traceback for a user's path
        _fail(f"{path}: unreadable ({type(e).__name__}: {e})")
        return
    lags = None
    if kafka_bootstrap:
        cp, lags = _with_kafka_lag(cp, path, kafka_bootstrap)
    if batch_id is not None and batch_id not in set(cp.offset_batch_ids) | set(cp.commit_batch_ids):
        known = f"{cp.offset_batch_ids[0]}–{cp.latest_batch_id}" if cp.offset_batch_ids else "none"
        click.echo(f"streamwatch inspect: batch {batch_id} is not in this checkpoint (offsets hold {known})", err=True)
        sys.exit(ExitCode.USAGE)

    if as_json:
        import orjson

        from streamwatch.checkpoint import jsonout

        if batches:
            doc = jsonout.timeline_doc(cp, batch_timeline(cp))
        elif batch_id is not None:
            doc = jsonout.batch_doc(cp, batch_id)
        else:
            doc = jsonout.summary_doc(cp)
            doc["formats"] = _formats_doc(features.answer(cp), target)
        if lags is not None:
            doc["kafkaLag"] = _lag_doc(kafka_bootstrap, lags)
        sys.stdout.buffer.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS) + b"\n")
        sys.stdout.flush()
    else:
        from rich.console import Console

        from streamwatch.checkpoint import jsonout, report

        out = Console(soft_wrap=False)
        if batches:
            out.print(report.timeline(batch_timeline(cp)))
            out.print(report.findings_table(cp))
        elif batch_id is not None:
            out.print(report.batch(jsonout.batch_doc(cp, batch_id)))
        else:
            out.print(report.summary(cp))
            _print_formats(out, features.answer(cp), target)
        if lags is not None:
            out.print(_lag_table(kafka_bootstrap, lags))
    if check:
        worst = worst_severity(cp.findings)
        sys.exit(ExitCode.ERRORS if worst == "error" else ExitCode.WARNINGS if worst == "warning" else ExitCode.OK)


def _formats_doc(a, target) -> dict:
    """``formats`` of inspect --json: the features, the Spark lines that can restart, and with
    ``--spark`` the answer for that line."""
    from streamwatch.checkpoint.features import line_text

    doc = {
        "features": [{"name": f.name, "value": f.value, "needsSpark": line_text(f.needs), "evidence": f.evidence}
                     for f in a.features],
        "needsSpark": line_text(a.needs),
        "restartableBy": [line_text(x) for x in a.can],
        "notRestartableBy": {line_text(x): [f.name for f in fs] for x, fs in a.cannot},
    }
    if target is not None:
        doc["target"] = {"spark": line_text(target), "canRestart": target in a.can}
    if a.blocked_by is not None:
        doc["blockedBy"] = a.blocked_by
    return doc


def _print_formats(out, a, target) -> None:
    from rich.text import Text

    from streamwatch.checkpoint.features import formats_text, move_text, restart_text

    out.print(Text.assemble(("formats            ", "bold"), formats_text(a)))
    out.print(Text.assemble(("restartable by     ", "bold"), restart_text(a)))
    if target is not None:
        for line in move_text(a, target):
            out.print(Text(line))


def _with_kafka_lag(cp, path: str, bootstrap: str):
    """``cp`` with ``kafka-data-lost`` findings, and the lag per partition; exits 2 when the
    checkpoint has no Kafka source, 4 when the broker does not answer."""
    from dataclasses import replace

    from streamwatch.errors import one_line
    from streamwatch.spark.kafka_lag import broker_lag, checkpoint_kafka_offsets, data_lost_findings

    committed = checkpoint_kafka_offsets(path, cp)
    if not committed:
        click.echo(f"streamwatch inspect: {path}: no committed batch of a Kafka source (--kafka-bootstrap)", err=True)
        sys.exit(ExitCode.USAGE)
    try:
        lags = broker_lag(committed, bootstrap, timeout_s=15.0)
    except Exception as e:  # noqa: BLE001 - KafkaException: one line, never a traceback
        _fail(f"Kafka broker {bootstrap} did not answer: {one_line(e)}")
    return replace(cp, findings=(*cp.findings, *data_lost_findings(lags, path))), lags


def _lag_doc(bootstrap, lags) -> dict:
    known = [x.lag for x in lags if x.lag is not None]
    return {"bootstrap": bootstrap, "total": sum(known) if known else None,
            "partitions": [{"topic": x.topic, "partition": x.partition, "committed": x.committed,
                            "earliest": x.earliest, "latest": x.latest, "lag": x.lag, "dataLost": x.data_lost}
                           for x in lags]}


def _lag_table(bootstrap, lags):
    from rich.table import Table

    from streamwatch.analysis import fmt

    t = Table(title=f"Kafka consumer lag (broker {bootstrap}: latest − last committed batch)", title_justify="left")
    for col in ("topic", "partition", "committed", "earliest", "latest", "lag"):
        t.add_column(col, justify="left" if col == "topic" else "right")
    for x in lags:
        t.add_row(x.topic, str(x.partition), fmt.count(x.committed), f"{x.earliest:,}", f"{x.latest:,}",
                  fmt.count(x.lag) + (" DATA LOST" if x.data_lost else ""))
    return t
