"""The version matrix: checkpoints written by every pyspark users run (3.5 to 4.3,
``tests/fixtures/matrix/<version>/``, from ``scripts/version_matrix.py``), read without a JVM and
held against what that Spark itself reported about them (``facts.json``): its progress
(watermarks, operator names, ``numRowsTotal`` per batch), its ``state-metadata`` source and its
``statestore`` reader's rows."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from streamwatch.checkpoint.reader import read_checkpoint
from streamwatch.state import read_state
from streamwatch.state.audit import audit_state

MATRIX = Path(__file__).resolve().parent.parent / "fixtures" / "matrix"


def _facts() -> list[tuple[str, str, dict[str, Any]]]:
    out = []
    for f in sorted(MATRIX.glob("*/facts.json")):
        facts = json.loads(f.read_text())
        for name, case in sorted(facts["cases"].items()):
            out.append((facts["spark"], name, case))
    return out


CASES = _facts()
WRITTEN = [(v, n, c) for v, n, c in CASES if "error" not in c]
IDS = [f"{v}-{n}" for v, n, _ in WRITTEN]


def _cp(version: str, case: dict[str, Any]) -> Path:
    return MATRIX / version / case["checkpoint"]


def _iso_ms(text: str) -> int:
    return int(dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def test_the_matrix_covers_every_spark_users_run():
    versions = {v for v, _, _ in CASES}
    assert {"3.5", "4.0", "4.1", "4.2", "4.3"} <= {".".join(v.split(".")[:2]) for v in versions}, versions


def test_every_case_the_spark_supports_was_written():
    failed = [f"{v} {n}: {c['error']}" for v, n, c in CASES if "error" in c]
    assert not failed, failed


@pytest.mark.parametrize(("version", "name", "case"), WRITTEN, ids=IDS)
def test_watermark_of_every_batch_is_spark_own(version, name, case):
    cp = read_checkpoint(str(_cp(version, case)))
    by_batch = {o.batch_id: o.watermark_ms for o in cp.offsets}
    checked = 0
    for p in case["progress"]:
        if p["watermark"] is None or p["batchId"] not in by_batch:
            continue
        assert by_batch[p["batchId"]] == _iso_ms(p["watermark"]), f"batch {p['batchId']}"
        checked += 1
    if any(p["watermark"] for p in case["progress"]):
        assert checked, "no batch's watermark was compared"


def _healthy(name: str) -> bool:
    return not name.startswith("repart_hdfs")


@pytest.mark.parametrize(("version", "name", "case"), WRITTEN, ids=IDS)
def test_a_healthy_checkpoint_reads_without_a_warning(version, name, case):
    if not _healthy(name):
        pytest.skip("a checkpoint Spark left broken: tests/matrix/test_repartition_matrix.py")
    cp = read_checkpoint(str(_cp(version, case)))
    bad = [f"{f.severity} {f.code}: {f.message}" for f in cp.findings if f.severity in ("error", "warning")]
    assert not bad, bad


@pytest.mark.parametrize(("version", "name", "case"), WRITTEN, ids=IDS)
def test_operator_names_are_spark_own_or_unknown(version, name, case):
    cp = read_checkpoint(str(_cp(version, case)))
    last = [p for p in case["progress"] if p["stateOperators"]]
    if not last:
        pytest.skip("a stateless query")
    spark_names = [op["operatorName"] for op in last[-1]["stateOperators"]]
    ours = [op.name for op in sorted(cp.state, key=lambda o: o.operator_id)]
    assert len(ours) == len(spark_names)
    for mine, theirs in zip(ours, spark_names, strict=True):
        assert mine in (theirs, None), (mine, theirs)
    if "join" in name:
        # a join is known by its store folders even where Spark wrote no operator metadata
        assert ours == spark_names


@pytest.mark.parametrize(("version", "name", "case"), WRITTEN, ids=IDS)
def test_state_rows_per_batch_are_spark_num_rows_total(version, name, case):
    spark_totals = {p["batchId"]: [op["numRowsTotal"] for op in p["stateOperators"]]
                    for p in case["progress"] if p["stateOperators"]}
    if not spark_totals:
        pytest.skip("a stateless query")
    audits = audit_state(str(_cp(version, case)))
    compared = 0
    for a in audits:
        assert a.error is None, a.error
        for point in a.points:
            if point.batch_id in spark_totals:
                assert point.rows == spark_totals[point.batch_id][a.operator_id], \
                    f"operator {a.operator_id} after batch {point.batch_id}"
                compared += 1
    assert compared, "no audit point fell on a batch Spark reported"


def _norm(v: Any) -> Any:
    """The generator's JSON form of a value (see scripts/version_matrix.py ``norm``)."""
    if isinstance(v, dt.datetime):
        return round(v.timestamp() * 1_000_000)
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, dict):
        return {str(k): _norm(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_norm(x) for x in v]
    if isinstance(v, Decimal):
        return str(v.normalize())
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).hex()
    return v


def _flat(row: dict[str, Any]) -> dict[str, Any]:
    """A statestore row as ``part.field`` → value: ``key``/``value``, and transformWithState's
    ``list_element`` and ``user_map_key``/``user_map_value``."""
    out = {"partition_id": row["partition_id"]}
    for part, fields in row.items():
        if part != "partition_id":
            out.update({f"{part}.{k}": v for k, v in (fields or {}).items()})
    return out


def _ours(table, side: bool = False) -> list[str]:
    """Our rows in the facts' form; a join side (Spark's ``joinSide`` reader) without the
    matched flag, which that reader does not return."""
    names = [c.name for c in table.columns]
    rows = []
    for r in table.rows:
        d = {n: _norm(x) for n, x in zip(names, r, strict=True) if not (side and n == "value.matched")}
        rows.append(json.dumps(d, sort_keys=True))
    return sorted(rows)


STORE_CASES = [(v, n, c, s) for v, n, c in WRITTEN for s in c.get("stores", []) if "rows" in s]
STORE_IDS = [f"{v}-{n}-{'-'.join(str(x) for x in s['options'].values())}" for v, n, c, s in STORE_CASES]


@pytest.mark.parametrize(("version", "name", "case", "store"), STORE_CASES, ids=STORE_IDS)
def test_state_rows_are_spark_statestore_rows(version, name, case, store):
    opts = store["options"]
    kw: dict[str, Any] = {"operator": int(opts["operatorId"])}
    if "joinSide" in opts:
        kw["store"] = opts["joinSide"]
    elif "stateVarName" in opts:
        kw["var"] = opts["stateVarName"]
    else:
        kw["store"] = opts["storeName"]
    tables = read_state(str(_cp(version, case)), **kw)
    assert len(tables) == 1
    (t,) = tables
    assert not [f for f in t.findings if f.severity == "error"], t.findings
    assert t.total_rows == store["count"]
    spark_rows = [_flat(r) for r in store["rows"]]
    ours = [json.loads(r) for r in _ours(t, side="joinSide" in opts)]
    if any(_misread_event_time(r) for r in spark_rows):
        # Spark 4.3's joinSide reader decodes a format-4 key's event time from the key string's
        # bytes (the one-field key row read with the two-field schema): hold ours against the
        # row's own event time instead, and compare the rest as Spark gives it
        assert all(_misread_event_time(r) for r in spark_rows)
        for r in ours:
            assert r.pop("key.__event_time") in {v for k, v in r.items() if k.endswith("ts")}, r
        spark_rows = [{k: v for k, v in r.items() if k != "key.__event_time"} for r in spark_rows]
    assert sorted(json.dumps(r, sort_keys=True) for r in ours) == \
        sorted(json.dumps(r, sort_keys=True) for r in spark_rows)


def _misread_event_time(row: dict[str, Any]) -> bool:
    """Whether a joinSide row's ``key.__event_time`` is the key string's bytes read as a
    little-endian long (the Spark 4.3.0 reader's misread of a format-4 key)."""
    if "key.__event_time" not in row or not isinstance(row.get("key.field0"), str):
        return False
    return row["key.__event_time"] == int.from_bytes(row["key.field0"].encode()[:8].ljust(8, b"\0"), "little")


UNREADABLE = [(v, n, c, s) for v, n, c in WRITTEN for s in c.get("stores", [])
              if "error" in s and "storeName" in s["options"] and "Join" not in str(c.get("metadata"))]


@pytest.mark.parametrize(("version", "name", "case", "store"), UNREADABLE,
                         ids=[f"{v}-{n}-{s['options']['storeName']}" for v, n, c, s in UNREADABLE])
def test_where_spark_cannot_read_a_store_its_row_count_holds(version, name, case, store):
    """Spark's own reader failed on this store (e.g. checkpoint format v2 stores in 4.x): the
    rows streamwatch reads are as many as Spark's progress counted after the last batch."""
    op = int(store["options"]["operatorId"])
    last = [p for p in case["progress"] if p["stateOperators"]][-1]
    (t,) = read_state(str(_cp(version, case)), operator=op, store=store["options"]["storeName"])
    assert not [f for f in t.findings if f.severity == "error"], t.findings
    assert t.total_rows == len(t.rows) == last["stateOperators"][op]["numRowsTotal"]


ROCKS = [(v, n, c) for v, n, c in WRITTEN if c.get("provider") == "RocksDBStateStoreProvider" and "tws" not in n]


@pytest.mark.parametrize(("version", "name", "case"), ROCKS, ids=[f"{v}-{n}" for v, n, _ in ROCKS])
def test_changelog_checkpointing_is_named_as_the_query_set_it(version, name, case):
    """The conf a case was written with (not in the offsets log: Spark does not record it)."""
    from streamwatch.checkpoint.report import _changelog_text

    cp = read_checkpoint(str(_cp(version, case)))
    want = "on" if case["options"].get("changelog") else "off"
    assert _changelog_text(cp, "RocksDBStateStoreProvider") == f", changelog checkpointing {want}"


def test_inspect_and_retention_give_one_compaction_interval(tmp_path):
    """Before any ``.compact`` file the interval is Spark's (the conf, else 10) in both views;
    a query that set ``fileSource.log.compactInterval`` gets its own."""
    import shutil
    import subprocess
    import sys

    cli = str(Path(sys.executable).parent / "streamwatch")
    src = MATRIX / "4.2.0" / "agg_hdfs" / "cp"
    if not src.exists():
        pytest.skip("no 4.2.0 agg_hdfs fixture")
    conf_set = tmp_path / "cp"
    shutil.copytree(src, conf_set)
    for f in (conf_set / "offsets").iterdir():
        f.write_text(f.read_text().replace('"conf":{', '"conf":{"spark.sql.streaming.fileSource.log.compactInterval":"4",', 1))
    for cp, want, source in ((src, 10, "default"), (conf_set, 4, "conf")):
        doc = json.loads(subprocess.run([cli, "inspect", str(cp), "--json"], capture_output=True, text=True, check=True).stdout)
        ret = json.loads(subprocess.run([cli, "retention", str(cp), "--json"], capture_output=True, text=True, check=True).stdout)
        log = doc["sources"][0]["file_log"]
        assert (log["compact_interval"], log["compact_interval_source"]) == (want, source)
        assert ret["file_logs"][0]["compact_interval"] == want
