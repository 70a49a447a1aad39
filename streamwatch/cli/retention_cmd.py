"""``streamwatch retention CHECKPOINT``: what Spark's own cleanup deletes next (read-only plan)."""

from __future__ import annotations

import sys
from typing import Any

import click

from streamwatch.cli.stores_help import OBJECT_STORES
from streamwatch.errors import Unreadable

EPILOG = """\b
Examples:
  streamwatch retention ./streamwatch-workspace/checkpoints/flights/gold
  streamwatch retention CP --min-batches 10     as if minBatchesToRetain were 10
  streamwatch retention CP --json | jq .delete_bytes   schema streamwatch.retention/1
  streamwatch retention CP --max-versions-per-maintenance 5   RocksDB: 5 versions a run

\b
minBatchesToRetain comes from --min-batches, else the offsets conf, else Spark's
default 100. The plan lists, with bytes: offsets/commits the next batch purges,
state files the maintenance after the next batch deletes (HDFS: versions
before the snapshot needed for (latest+1)-minBatches, a .delta beside a purged
.snapshot one maintenance later; RocksDB: zips/changelogs below the newest
zip at or below (latest+1)-minBatches+1, at most N versions a run with
--max-versions-per-maintenance, SSTs only they name; orphan SSTs listed apart), and for each file source/sink log the next
.compact file, its size and growth per compaction. Nothing is deleted: this is
a plan.

\b
Exit codes:
  0  plan printed
  2  bad option
  4  the checkpoint is unreadable
""" + OBJECT_STORES


@click.command(epilog=EPILOG)
@click.argument("path", type=str)
@click.option("--min-batches", "min_batches", type=click.IntRange(min=1), default=None, metavar="N", help="minBatchesToRetain to plan with (default: offsets conf, else 100).")
@click.option("--max-versions-per-maintenance", "max_per_run", type=click.IntRange(min=-1), default=-1, show_default=True, metavar="N",
              help="spark.sql.streaming.stateStore.maxVersionsToDeletePerMaintenance (RocksDB state; -1: no cap).")
@click.option("--sink", type=str, default=None, metavar="DIR", help="The file sink's output folder (discovered in a streamwatch workspace).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (schema streamwatch.retention/1, see docs/ops.md).")
def retention(path: str, min_batches: int | None, max_per_run: int, sink: str | None, as_json: bool) -> None:
    """What Spark's cleanup (spark.sql.streaming.minBatchesToRetain) deletes next
    under the checkpoint at PATH, and what it never will. Read-only, no JVM."""
    from streamwatch.checkpoint import read_checkpoint
    from streamwatch.checkpoint.fs import open_storage
    from streamwatch.checkpoint.ops.retention import plan

    try:  # CheckpointError, StorageError: their own one line, exit 4
        cp = read_checkpoint(path, sink=sink, full=False)
        storage, root = open_storage(path)
        sink_storage = open_storage(cp.sink_path)[0] if cp.sink_path else None
        doc = plan(storage, root, cp, min_batches, sink_storage, max_per_run)
    except OSError as e:
        raise Unreadable(f"{path}: unreadable ({e.strerror or e})") from None
    if as_json:
        import orjson

        sys.stdout.buffer.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
        sys.stdout.flush()
        return
    click.echo(render(doc))


def _b(n: int | None) -> str:
    """Bytes for people: ``742 B``, ``4.1 KiB`` … ``3.0 GiB`` (GiB the largest); ``?`` unknown."""
    if n is None:
        return "?"
    x, unit = float(n), 0
    while abs(x) >= 1024 and unit < 3:
        x, unit = x / 1024, unit + 1
    return f"{n:.0f} B" if unit == 0 else f"{x:.1f} {('KiB', 'MiB', 'GiB')[unit - 1]}"


def _ids(ids: list[int]) -> str:
    if not ids:
        return "nothing"
    return str(ids[0]) if len(ids) == 1 else f"{ids[0]}–{ids[-1]} ({len(ids)} files)"


def render(doc: dict[str, Any]) -> str:
    """The text report of a ``streamwatch.retention/1`` document."""
    out = [f"{doc['path']}: minBatchesToRetain {doc['min_batches_to_retain']} ({doc['min_batches_source']})"]
    b = doc["batch_logs"]
    out.append(f"next batch {b['next_batch']} purges offsets/commits below {b['purge_below']}" if b["purge_below"] is not None
               else f"next batch {b['next_batch']}: nothing to purge yet (batch id ≤ minBatchesToRetain)")
    for name in ("offsets", "commits"):
        x = b[name]
        out.append(f"  {name}/: {x['files']} files, {_b(x['bytes'])}; deletes {_ids(x['delete_next'])} ({_b(x['delete_bytes'])})")
    for op in doc["state"]:
        what = f"{op['name']}, {op['provider']}" if op["name"] else op["provider"]  # no operator metadata: no name
        out.append(f"state {op['operator_id']} ({what}): {_b(op['bytes'])}; the maintenance after the next batch "
                   f"deletes {_b(op['delete_bytes'])}" + (f", the one after {_b(op['after_next_bytes'])}" if op["after_next_bytes"] else "")
                   + (f"; orphan SSTs {_b(op['orphan_bytes'])}" if op["orphan_bytes"] else ""))
        for s in op["stores"]:
            dels = s["delete_next"]
            line = f"  {s['partition']}/{s['store']}: latest v{s['latest_version']}, keeps from v{s.get('earliest_version_kept')}; deletes {len(dels)} files"
            if dels:
                line += f" ({dels[0]} … {dels[-1]})" if len(dels) > 1 else f" ({dels[0]})"
            if s.get("delete_after_next"):
                line += f"; then {len(s['delete_after_next'])} files ({_b(s['after_next_bytes'])})"
            if s.get("orphan_ssts"):
                line += f"; orphans: {len(s['orphan_ssts'])} files ({_b(s['orphan_bytes'])})"
            out.append(line)
    for lg in doc["file_logs"]:
        name = f"sources/{lg['index']}" if lg["kind"] == "source" else "sink _spark_metadata"
        out.append(
            f"{name}: interval {lg['compact_interval']}, latest {lg['latest_batch']}, next compaction at batch {lg['next_compact']} "
            f"≈ {_b(lg['next_compact_bytes_estimate'])} (≥ {_b(lg['next_compact_bytes_min'])}), grows ≈ {_b(lg['growth_per_compaction_bytes'])} per compaction"
        )
        if lg["delete_below"] is not None:
            out.append(f"  deletes files below {lg['delete_below']} older than the cleanup delay: {len(lg['delete_next'])} files ({_b(lg['delete_bytes'])})")
    out.append(f"total: next cleanup frees {_b(doc['delete_bytes'])}" + (f"; the maintenance after it {_b(doc['after_next_bytes'])}" if doc["after_next_bytes"] else ""))
    return "\n".join(out)
