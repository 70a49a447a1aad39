"""Which checkpoint format features a checkpoint uses, and which Spark can restart it.

Spark reads a checkpoint only when it knows every format the checkpoint was written in: the
log versions (``HDFSMetadataLog.validateVersion`` refuses a newer ``vN``), the state formats
recorded in the offsets log's conf (restored on restart, never upgraded in place), the state
checkpoint format (state checkpoint ids in the commit log), the operator metadata version and
the operators themselves. Each feature below names the oldest Spark that reads it; the answer
"which Spark can restart this" is the Sparks at or above the newest of those.

The minimum versions are held against what real Sparks did: ``make restart-matrix`` restarts
every checkpoint of ``tests/fixtures/matrix/`` under every pyspark from 3.5 to 4.3
(``bench/COMPAT-MATRIX.md``), and the tests compare this module's answer with it.
"""

from __future__ import annotations

from dataclasses import dataclass

from streamwatch.model.checkpoint import Checkpoint

#: The Spark versions the answer is given for (minor lines users run; 3.5 is the LTS line).
SPARK_LINES: tuple[tuple[int, int], ...] = ((3, 5), (4, 0), (4, 1), (4, 2), (4, 3))

JOIN_FORMAT = "spark.sql.streaming.join.stateFormatVersion"
CHECKPOINT_FORMAT = "spark.sql.streaming.stateStore.checkpointFormatVersion"
ENCODING = "spark.sql.streaming.stateStore.encodingFormat"
ROW_CHECKSUM = "spark.sql.streaming.stateStore.rowChecksum.enabled"
MERGE_OPERATOR = "spark.sql.streaming.stateStore.rocksdb.mergeOperatorVersion"


@dataclass(frozen=True, slots=True)
class Feature:
    """One format feature the checkpoint uses: ``name`` (e.g. ``offsets log``), ``value``
    (e.g. ``v2, named sources``), ``needs`` the oldest Spark line that reads it ((major, minor);
    (3, 5) when every supported Spark does) and ``evidence``: where it was seen (a path or conf)."""

    name: str
    value: str
    needs: tuple[int, int]
    evidence: str


@dataclass(frozen=True, slots=True)
class RestartAnswer:
    """``features`` in the order shown; ``needs`` the newest of their minimums; ``can`` the
    Spark lines of :data:`SPARK_LINES` that can restart the checkpoint, ``cannot`` the others
    with the features that stop each; ``blocked_by`` the code of a finding that stops every
    Spark until the checkpoint is repaired (``can`` is then empty)."""

    features: tuple[Feature, ...]
    needs: tuple[int, int]
    can: tuple[tuple[int, int], ...]
    cannot: tuple[tuple[tuple[int, int], tuple[Feature, ...]], ...]
    blocked_by: str | None = None


def line_text(line: tuple[int, int]) -> str:
    return f"{line[0]}.{line[1]}"


def parse_line(text: str) -> tuple[int, int]:
    """``"4.2"`` or ``"4.2.0"`` → (4, 2). Raises ValueError on anything else."""
    parts = text.strip().split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts[:3]):
        raise ValueError(f"not a Spark version: {text!r} (expected e.g. 4.2 or 3.5.7)")
    return int(parts[0]), int(parts[1])


def features(cp: Checkpoint) -> tuple[Feature, ...]:
    """The format features of ``cp`` (read from its logs, conf and state operators)."""
    out: list[Feature] = []
    conf = dict(cp.offsets[-1].conf) if cp.offsets else {}
    if cp.offsets:
        v = max(o.version for o in cp.offsets)
        named = sorted({s for o in cp.offsets for s in o.source_ids if not s.isdigit()})
        value = f"v{v}" + (f", named sources ({', '.join(named)})" if named else "")
        out.append(Feature("offsets log", value, (4, 2) if v >= 2 else (3, 5), "offsets/"))
    if cp.commits:
        v = max(c.version for c in cp.commits)
        out.append(Feature("commit log", f"v{v}", (4, 2) if v >= 3 else (4, 0) if v == 2 else (3, 5), "commits/"))
    ids = any(c.state_unique_ids for c in cp.commits)
    fmt = conf.get(CHECKPOINT_FORMAT)
    if ids or (fmt is not None and fmt != "1"):
        out.append(Feature("state checkpoint format", "v2 (state checkpoint ids)", (4, 0),
                           "commits/ stateUniqueIds" if ids else CHECKPOINT_FORMAT))
    if any(_is_join(op.name) for op in cp.state) and JOIN_FORMAT in conf:
        jf = int(conf[JOIN_FORMAT]) if conf[JOIN_FORMAT].isdigit() else 0
        out.append(Feature("join state format", f"v{conf[JOIN_FORMAT]}",
                           (4, 2) if jf >= 4 else (4, 1) if jf == 3 else (3, 5), JOIN_FORMAT))
    tws = [op for op in cp.state if (op.name or "").startswith("transformWithState") or op.state_variables]
    if tws:
        out.append(Feature("operator", "transformWithState", (4, 0), f"state/{tws[0].operator_id}"))
    meta = max((op.metadata_version or 0 for op in cp.state), default=0)
    if meta:
        # Spark 3.5 neither writes nor reads operator metadata: it never stops a restart alone
        out.append(Feature("operator metadata", f"v{meta}", (3, 5), "state/<op>/_metadata"))
    if conf.get(ENCODING, "unsaferow") != "unsaferow":
        out.append(Feature("state encoding", conf[ENCODING], (4, 0), ENCODING))
    if conf.get(ROW_CHECKSUM) == "true":
        out.append(Feature("state row checksums", "on", (4, 2), ROW_CHECKSUM))
    return tuple(out)


def _is_join(name: str | None) -> bool:
    return name == "symmetricHashJoin"


#: Findings after which no Spark restarts the checkpoint until it is repaired (``recover``):
#: Spark 4.2+ refuses an unfinished offline repartition (STREAMING_UNFINISHED_REPARTITION_DETECTED).
BLOCKING = ("state-repartition-unfinished",)


def answer(cp: Checkpoint) -> RestartAnswer:
    """Which of :data:`SPARK_LINES` can restart ``cp``, and why not the others."""
    fs = features(cp)
    needs = max((f.needs for f in fs), default=(3, 5))
    blocked = next((f.code for f in cp.findings if f.code in BLOCKING), None)
    if blocked is not None:
        return RestartAnswer(fs, needs, (), tuple((line, ()) for line in SPARK_LINES), blocked)
    can = tuple(line for line in SPARK_LINES if line >= needs)
    cannot = tuple((line, tuple(f for f in fs if f.needs > line)) for line in SPARK_LINES if line < needs)
    return RestartAnswer(fs, needs, can, cannot)


def _lines(lines: tuple[tuple[int, int], ...]) -> str:
    return ", ".join(line_text(x) for x in lines)


def formats_text(a: RestartAnswer) -> str:
    """One line: the features (``offsets log v1 · commit log v2 · …``)."""
    return " · ".join(f"{f.name} {f.value}" for f in a.features) or "none recorded"


def restart_text(a: RestartAnswer) -> str:
    """One line: which Spark lines can restart the checkpoint (``Spark 4.2 or newer (…)``)."""
    if a.blocked_by is not None:
        return f"no Spark until repaired ({a.blocked_by}: see `streamwatch recover CP --plan`)"
    if not a.can:
        return f"none of Spark {_lines(SPARK_LINES)}"
    if not a.cannot:
        return f"every Spark from {line_text(SPARK_LINES[0])} to {line_text(SPARK_LINES[-1])}"
    stops = sorted({f.name for _, fs in a.cannot for f in fs})
    return f"Spark {line_text(a.needs)} or newer; not {_lines(tuple(x for x, _ in a.cannot))} ({', '.join(stops)})"


def move_text(a: RestartAnswer, target: tuple[int, int]) -> list[str]:
    """What changes when the checkpoint's query moves to Spark ``target``: whether it can restart
    and, if not, each feature that stops it; if so, that the formats stay as written (Spark
    restores the state formats recorded in the offsets log on restart and keeps the logs'
    versions, so a checkpoint is never upgraded in place)."""
    if a.blocked_by is not None:
        return [f"Spark {line_text(target)} cannot restart this checkpoint until it is repaired ({a.blocked_by}):",
                "  see `streamwatch recover CP --plan`"]
    blocking = tuple(f for f in a.features if f.needs > target)
    if blocking:
        out = [f"Spark {line_text(target)} cannot restart this checkpoint:"]
        out += [f"  {f.name} {f.value} needs Spark {line_text(f.needs)} or newer ({f.evidence})" for f in blocking]
        out.append("  a restart there needs a new checkpoint (the query starts over from its sources' starting offsets)")
        return out
    out = [f"Spark {line_text(target)} can restart this checkpoint."]
    if a.features:
        out.append("  kept as written (restored from the checkpoint, never upgraded in place): " + formats_text(a))
    return out
