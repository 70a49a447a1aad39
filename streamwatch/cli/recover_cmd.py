"""``streamwatch recover CHECKPOINT --plan | --apply-to NEWDIR``: the smallest edit that lets
Spark restart, written to a copy (the original is never touched). No JVM."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from streamwatch.errors import ExitCode, StreamwatchError, UsageError

if TYPE_CHECKING:  # Spark starts only for --verify
    from streamwatch.spark.compat import SparkAnswer

EPILOG = """\b
Examples:
  streamwatch recover CP --plan               what blocks a restart, the fix, its cost
  streamwatch recover CP --plan --json        schema streamwatch.recover/1 (docs/ops.md)
  streamwatch recover CP --apply-to CP.fixed  write the repaired COPY; CP is untouched
  streamwatch recover CP --apply-to CP.fixed --verify --query jobs.orders:query
                                              …and restart the query on a temporary copy of it
  # then point the query's checkpointLocation at CP.fixed

\b
Handles: commits-behind, previous-offsets-missing, offsets-not-empty-at-batch-0,
a missing metadata file, torn/unparsable last offsets/commits files, .tmp
leftovers, state versions missing for the last committed batch, an unfinished
offline state repartition (Spark 4.2+ refuses to restart over it: its uncommitted
offsets go, the query restarts on the old partitions). Each repair says
which batches re-run (same offsets) or are re-planned, and whether the sink may
see a batch twice (file sink / Delta: no; foreachBatch: yes unless idempotent).

\b
Exit codes:
  0  --plan: nothing blocks a restart; --apply-to: the copy is written (with --verify: and Spark restarted it)
  1  --plan: repairs planned
  2  bad option (--plan with --apply-to, --verify without --apply-to and --query, a bad MODULE:FUNCTION)
  3  cannot be repaired (start a new checkpoint); with --verify: Spark refused to restart the copy
  4  the checkpoint is unreadable, or NEWDIR cannot be written
"""


@click.command(epilog=EPILOG)
@click.argument("path", type=str)
@click.option("--plan", "show_plan", is_flag=True, help="Print the repairs and their cost (default).")
@click.option("--apply-to", "apply_to", type=str, default=None, metavar="NEWDIR", help="Write the repaired copy to NEWDIR (must not exist).")
@click.option("--sink", type=str, default=None, metavar="DIR", help="The sink's output folder (discovered in a streamwatch workspace).")
@click.option("--verify", is_flag=True, help="With --apply-to and --query: start the query on a temporary copy of NEWDIR (and of its file sink) and report whether Spark restarted.")
@click.option("--query", "query", type=str, default=None, metavar="MODULE:FUNCTION", help="Builds the query (a DataStreamWriter, not started) for --verify.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (schema streamwatch.recover/1).")
def recover(path: str, show_plan: bool, apply_to: str | None, sink: str | None, verify: bool, query: str | None, as_json: bool) -> None:
    """Plan (and apply to a copy) the smallest edits that let Spark restart the
    query whose checkpoint is PATH."""
    from streamwatch.checkpoint import read_checkpoint
    from streamwatch.checkpoint.ops import recover as ops

    if show_plan and apply_to:
        raise UsageError("use --plan or --apply-to NEWDIR, not both")
    if verify and not (apply_to and query):
        raise UsageError("--verify needs --apply-to NEWDIR and --query MODULE:FUNCTION")
    cp = read_checkpoint(path, sink=sink, full=True)  # CheckpointError: exit 4
    plan = ops.plan(cp)
    written: list[str] | None = None
    if apply_to:
        if not plan.recoverable:  # exit 3: nothing to write, start a new checkpoint
            raise StreamwatchError("cannot be repaired: " + "; ".join(r.summary for r in plan.repairs if r.note))
        written = ops.apply_to(path, plan, apply_to)  # RecoverError: exit 4
    out = plan.doc()
    if written is not None:
        out["applied_to"] = apply_to
        out["edited"] = written
    if verify and written is not None and query and apply_to:  # --verify needs both (checked above)
        ans = _verify(query, apply_to, cp.sink_path)
        out["spark"] = {"restarted": ans.restarted, "error": ans.error, "batches_run": ans.batches_run}
    if as_json:
        import orjson

        sys.stdout.buffer.write(orjson.dumps(out, option=orjson.OPT_INDENT_2) + b"\n")
        sys.stdout.flush()
    else:
        click.echo(render(out))
    if written is not None:
        sys.exit(ExitCode.OK if out.get("spark", {}).get("restarted", True) else ExitCode.ERRORS)
    sys.exit(ExitCode.ERRORS if not plan.recoverable else ExitCode.WARNINGS if plan.repairs else ExitCode.OK)


def _verify(query: str, newdir: str, sink_path: str | None) -> SparkAnswer:
    """Spark's answer: start the query with availableNow on a temporary copy of NEWDIR."""
    click.echo("--verify: starting the query on a temporary copy of the repaired checkpoint…", err=True)
    from streamwatch.cli.compat_cmd import _session
    from streamwatch.spark import compat as sc

    spark = _session()
    writer = sc.load_writer(query, spark, search_path=".")  # QueryLoadError: exit 2
    return sc.verify(writer, newdir, sink_path)


def _ids(ids: list[int]) -> str:
    if not ids:
        return "none"
    return ", ".join(str(i) for i in ids) if len(ids) <= 4 else f"{ids[0]}–{ids[-1]} ({len(ids):,})"




def render(doc: dict[str, Any]) -> str:
    """The text report of a ``streamwatch.recover/1`` document."""
    out = [f"{doc['path']}: " + (f"restart blocked by {', '.join(doc['blocking_findings'])}" if doc["blocking_findings"] else "nothing blocks a restart")]
    for i, r in enumerate(doc["repairs"], 1):
        out.append(f"{i}. [{r['finding']}] {r['summary']}")
        for e in r["edits"]:
            what = {"delete": "delete", "write": "write ", "copy": "copy  "}[e["action"]]
            out.append(f"     {what} {e['path']}" + (f" ← {e['source']}" if e.get("source") else "") + (f"  {e['content']}" if e.get("content") else ""))
        if r.get("note") and r["note"] != "unrecoverable":  # "unrecoverable" is said by the summary
            out.append(f"     note: {r['note']}")
    if doc["repairs"]:
        a = doc["after"]
        # an absent end is a fact about the repaired log (nothing left / nothing committed)
        offs = "no offsets left (the query starts from its sources' start)" if a["latest_offsets"] is None else f"offsets end at {a['latest_offsets']}"
        out.append(f"after: {offs}, " + ("no batch committed" if a["last_commit"] is None else f"commits at {a['last_commit']}"))
        out.append(f"cost: re-run {_ids(doc['rerun'])}; re-planned {_ids(doc['replanned'])}")
        s = doc["sink"]
        out.append(f"sink ({s['kind']}): " + ("may see a batch twice — " if s["sees_batch_twice"] else "sees no batch twice — ") + s["why"])
    if doc.get("spark") is not None:
        sp = doc["spark"]
        run = "an unknown number of" if sp["batches_run"] is None else f"{sp['batches_run']:,}"
        out.append("Spark: " + (f"restarted on a copy, {run} batch(es) run" if sp["restarted"] else f"refused: {sp['error'] or 'no reason given'}"))
    if doc.get("applied_to"):
        out.append(f"repaired copy written to {doc['applied_to']} ({len(doc['edited']):,} edits); the original is untouched")
    return "\n".join(out)
