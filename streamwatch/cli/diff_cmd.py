"""``streamwatch diff OLD NEW``: what changed between two snapshots of one checkpoint, no JVM."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from streamwatch.cli.stores_help import OBJECT_STORES
from streamwatch.errors import ExitCode, Unreadable, UsageError

EPILOG = """\b
Examples:
  cp -r CP /tmp/cp-yesterday                 keep a copy, let the query run…
  streamwatch diff /tmp/cp-yesterday CP      …then see what it did
  streamwatch inspect CP --json > before.json
  streamwatch diff before.json CP            a saved inspect --json summary works as OLD
  streamwatch diff CP --from-batch 3 --to-batch 9     two batches of one checkpoint
  streamwatch diff OLD NEW --json | jq .sources       schema streamwatch.diff/1 (docs/ops.md)

\b
Shows: batches planned/committed/purged, each source's offset movement (file
source: files added to its log; Kafka: offsets per partition; rate/Delta fields),
watermark movement, conf changes, state versions and bytes per operator and
partition, sink log entries added, findings that appeared or cleared.
Nothing under OLD or NEW is ever written.

\b
Exit codes:
  0  no change
  1  changes found
  2  bad option (NEW missing, --from-batch/--to-batch out of range or with NEW)
  4  OLD or NEW unreadable
""" + OBJECT_STORES

if TYPE_CHECKING:  # the readers are imported when the command runs, not for --help
    from streamwatch.checkpoint.ops.snapshot import Snapshot


def _load(arg: str, sink: str | None, full: bool = True) -> Snapshot:
    """A Snapshot from a checkpoint folder/URL or a saved ``inspect --json`` file. Raises
    :class:`~streamwatch.checkpoint.CheckpointError` or :class:`Unreadable` (exit 4)."""
    import os

    from streamwatch.checkpoint import CheckpointError, read_checkpoint
    from streamwatch.checkpoint.ops.snapshot import SnapshotError, from_checkpoint, from_inspect_json

    if arg.endswith(".json") and os.path.isfile(arg):
        import orjson

        try:
            with open(arg, "rb") as fh:
                doc = orjson.loads(fh.read())
            return from_inspect_json(doc)
        except (OSError, orjson.JSONDecodeError, SnapshotError, KeyError, TypeError, ValueError) as e:
            raise Unreadable(f"{arg}: {e}") from None
    try:
        return from_checkpoint(read_checkpoint(arg, sink=sink, full=full))
    except CheckpointError:
        raise  # its own one line, exit 4
    except Exception as e:  # noqa: BLE001 - never a traceback for a user's path
        raise Unreadable(f"{arg}: unreadable ({type(e).__name__}: {e})") from None


@click.command(epilog=EPILOG)
@click.argument("old", type=str)
@click.argument("new", type=str, required=False)
@click.option("--from-batch", "from_batch", type=int, default=None, metavar="A", help="With one checkpoint: compare batch A…")
@click.option("--to-batch", "to_batch", type=int, default=None, metavar="B", help="…with batch B (default: the latest planned batch).")
@click.option("--sink", type=str, default=None, metavar="DIR", help="The sink's output folder (discovered in a streamwatch workspace).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (schema streamwatch.diff/1, see docs/ops.md).")
def diff(old: str, new: str | None, from_batch: int | None, to_batch: int | None, sink: str | None, as_json: bool) -> None:
    """Compare two snapshots of one checkpoint: OLD and NEW are checkpoint
    folders (or fsspec URLs), OLD may be a saved `inspect --json` summary.
    With --from-batch A [--to-batch B] compare two batches of the checkpoint OLD."""
    from streamwatch.checkpoint.ops import diff as ops

    if from_batch is not None or to_batch is not None:
        if new is not None:
            raise UsageError("give one checkpoint with --from-batch/--to-batch, or two snapshots without them")
        if from_batch is None:
            raise UsageError("--to-batch needs --from-batch")
        from streamwatch.checkpoint import read_checkpoint

        cp = read_checkpoint(old, sink=sink, full=True)  # CheckpointError: exit 4
        b = to_batch if to_batch is not None else cp.latest_batch_id
        if b is None or from_batch > b:
            raise UsageError(f"--from-batch {from_batch} is after --to-batch {b}")
        doc = ops.diff(ops.at_batch(cp, from_batch), ops.at_batch(cp, b))  # BatchRangeError: exit 2
    else:
        if new is None:
            raise UsageError("NEW is missing (or use --from-batch A --to-batch B on one checkpoint)")
        doc = ops.diff(_load(old, sink), _load(new, sink))
    if as_json:
        import orjson

        sys.stdout.buffer.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
        sys.stdout.flush()
    else:
        from rich.console import Console

        Console(soft_wrap=True, highlight=False).print(render(doc), markup=False)
    sys.exit(ExitCode.WARNINGS if ops.changed(doc) else ExitCode.OK)


def _span(s: list[int] | None) -> str:
    if not s:
        return "none"
    return str(s[0]) if s[0] == s[1] else f"{s[0]}–{s[1]} ({s[1] - s[0] + 1:,})"


def _id(v: Any) -> str:
    """A batch id or version as written (ids take no thousands separators), ``-`` when absent."""
    return "-" if v is None else str(v)


def _num(v: Any) -> str:
    """A count or offset for people: ``1,234,567``; a float to 3 decimals; ``-`` when absent."""
    if v is None:
        return "-"
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, float) and not v.is_integer():
        return f"{v:,.3f}".rstrip("0").rstrip(".")
    return f"{int(v):,}"


def _signed(v: int | float | None) -> str:
    """A change: ``+3``, ``-60``, ``±0`` — one sign, never ``+-``."""
    if v is None:
        return "-"
    return "±0" if v == 0 else ("+" if v > 0 else "-") + _num(abs(v))


def _bytes(n: int | None, signed: bool = False) -> str:
    from streamwatch.analysis.fmt import size

    if n is None:
        return "-"
    return (("+" if n > 0 else "-" if n < 0 else "±") if signed else "") + size(abs(n))


def _versions(v: list[int] | None) -> str:
    """A state operator's (min, max) versions as ``1–5``, ``-`` when there are none."""
    if not v:
        return "-"
    return str(v[0]) if v[0] == v[1] else f"{v[0]}–{v[1]}"


def _wm(ms: int | None) -> str:
    """A watermark (epoch ms) as UTC text; ``none`` for 0/absent (no event time yet)."""
    from streamwatch.model.timefmt import utc_text

    if not ms:
        return "none"
    text = utc_text(ms, millis=ms % 1000 != 0)
    return f"{text} UTC" if text else f"{ms:,} ms (out of range)"


def render(doc: dict[str, Any]) -> str:
    """The text report of a ``streamwatch.diff/1`` document: numbers with thousands separators,
    durations in s/min/h/d, sizes in B/KiB/MiB/GiB, signed changes, ``-`` for an unknown value."""
    b = doc["batches"]
    out = [f"old  {doc['old']['path']} ({doc['old']['origin']})", f"new  {doc['new']['path']} ({doc['new']['origin']})"]
    if doc["same_query"] is False:
        out.append(f"!! different queries: {doc['old']['query_id']} vs {doc['new']['query_id']}")
    out.append(f"batches   latest {_id(b['old']['latest'])} → {_id(b['new']['latest'])}, "
               f"committed {_id(b['old']['last_committed'])} → {_id(b['new']['last_committed'])}")
    out.append(f"          planned {_span(b['planned'])}; committed {_span(b['committed'])}; purged {_span(b['purged'])}"
               + (f"; ROLLED BACK {_span(b['rolled_back'])}" if b["rolled_back"] else ""))
    out.append(_watermark_line(doc["watermark"]))
    for s in doc["sources"]:
        out.extend(_source_lines(s))
    c = doc["conf"]
    out.extend(f"conf + {k}={v}" for k, v in c["added"].items())
    out.extend(f"conf - {k}={v}" for k, v in c["removed"].items())
    out.extend(f"conf ~ {k}: {v['old']} → {v['new']}" for k, v in c["changed"].items())
    for st in doc["state"]:
        out.extend(_state_lines(st))
    out.extend(_sink_lines(doc["sink"]))
    out.extend(_finding_lines(doc["findings"]))
    return "\n".join(out)


def _watermark_line(w: dict[str, Any]) -> str:
    """The watermark's move between the snapshots (or that it did not move)."""
    from streamwatch.checkpoint.report import duration_text

    if w["old_ms"] == w["new_ms"]:
        return f"watermark unchanged ({_wm(w['new_ms'])})"
    # 0 is Spark's "no watermark yet": a move from or to it is no duration
    moved = f" ({duration_text(w['moved_ms'], signed=True)})" if w["moved_ms"] is not None and w["old_ms"] and w["new_ms"] else ""
    return f"watermark {_wm(w['old_ms'])} → {_wm(w['new_ms'])}{moved}"


def _source_lines(s: dict[str, Any]) -> list[str]:
    """One source's change: file source files added, Kafka offsets per partition, or its fields."""
    head = f"source {s['id']} ({s['kind'] or 'unknown kind'})"
    if not s["changed"]:
        return [f"{head}: unchanged"]
    if "note" in s:
        return [f"{head}: {s['note']}"]
    if s["kind"] == "file":
        lo = s["log_offset"]
        n = s["files_added"]
        out = [f"{head}: logOffset {_id(lo['old'])} → {_id(lo['new'])}, {'unknown number of' if n is None else _num(n)} files added"]
        out.extend(f"    + {p}" for p in (s["files"] or [])[:10])
        if s["files"] and len(s["files"]) > 10:
            out.append(f"    … {len(s['files']) - 10:,} more")
        return out
    if s["kind"] == "kafka":
        return [f"{head}: {_signed(s['records'])} records",
                *(f"    {r['topic']}[{r['partition']}] {_num(r['old'])} → {_num(r['new'])} ({_signed(r['delta'])})"
                  for r in s["partitions"])]
    parts = [f"{k} {_num(v['old'])} → {_num(v['new'])}" + (f" ({_signed(v['delta'])})" if "delta" in v else "") for k, v in s["fields"].items()]
    return [f"{head}: " + ("; ".join(parts) or f"{s['old'] or '-'} → {s['new'] or '-'}")]


def _state_lines(st: dict[str, Any]) -> list[str]:
    """One state operator's versions and bytes, then up to 20 of its partitions."""
    v = st["versions"]
    d = st["bytes_delta"]
    out = [f"state {st['operator_id']} ({st['name'] or '-'}): versions {_versions(v['old'])} → {_versions(v['new'])}"
           + (f", {_bytes(d, signed=True)}" if d else "")]
    out.extend(f"    partition {p['partition']}/{p['store']}: version {_id(p['version']['old'])} → {_id(p['version']['new'])}, "
               f"bytes {_bytes(p['bytes']['old'])} → {_bytes(p['bytes']['new'])}"
               for p in (st["partitions"] or [])[:20])
    return out


def _sink_lines(sk: dict[str, Any]) -> list[str]:
    """The sink log's entries (and Delta version) added; nothing for an unknown sink."""
    if not sk["kind"]:
        return []
    e = sk["entries"]
    added = sk["files_added"]
    out = [f"sink ({sk['kind']}): log entries {_num(e['old'])} → {_num(e['new'])}" + (f", {len(added):,} files added" if added is not None else "")]
    if sk["delta_version"]:
        out.append(f"    Delta version {_id(sk['delta_version']['old'])} → {_id(sk['delta_version']['new'])}")
    return out


def _finding_lines(f: dict[str, Any]) -> list[str]:
    """Findings that appeared (+), cleared (-) or changed severity or message (~)."""
    out = [f"finding + {x['severity']} {x['code']}: {x['message']}" for x in f["appeared"]]
    out.extend(f"finding - {x['severity']} {x['code']}: {x['message']}" for x in f["cleared"])
    for x in f.get("changed", []):
        o, n = x["old"], x["new"]
        sev = n["severity"] if o["severity"] == n["severity"] else f"{o['severity']} → {n['severity']}"
        was = f" (was: {o['message']})" if o["message"] != n["message"] else ""
        out.append(f"finding ~ {sev} {x['code']}: {n['message']}{was}")
    return out
