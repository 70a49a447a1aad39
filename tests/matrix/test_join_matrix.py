"""Stream-stream join state in every format, on every Spark of the version matrix
(``tests/fixtures/matrix/<version>/``): what the matrix harness does not hold.

- ``streamwatch state CP`` reads both sides of a format 3 (virtual column families) and format 4
  (``keyWithTsToValues``) join — exit 0, Spark's rows; ``--store default`` of such a join never
  prints bytes as values (exit 4);
- format 3/4 column families, read one by one, are Spark's rows of the format 2 stores the same
  query wrote (``join_rocks`` of the same Spark: same input, same partitions);
- format 4's ``__event_time`` is the event time the row is filed under (its timestamp column,
  in µs). Spark 4.3's own ``joinSide`` reader shows, in its place, the first 8 bytes of the key
  row's variable-length region (``"k0"`` → 12395): it reads the one-field key row with the
  two-field key schema; streamwatch decodes the timestamp Spark stored after the row;
- Spark 3.5 writes no operator metadata: a join is named by its store folders, its sides read
  from their stores and schema files (none: an error, not a guess), their rows per batch are
  Spark's ``numRowsTotal``;
- no false ``state-growing``: a bounded join (or windowed aggregation), whole or ending on a
  data batch; and a join whose one side leaks while the other evicts is caught by that side.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from streamwatch.checkpoint.reader import read_checkpoint
from streamwatch.state import StateReadError, read_state
from streamwatch.state.audit import audit_state
from streamwatch.state.audit_findings import audit_findings
from tests.helpers.spark_codecs import lz4java

MATRIX = Path(__file__).resolve().parent.parent / "fixtures" / "matrix"
STREAMWATCH = str(Path(sys.executable).parent / "streamwatch")


def _facts() -> dict[str, dict[str, Any]]:
    return {json.loads(f.read_text())["spark"]: json.loads(f.read_text())["cases"] for f in sorted(MATRIX.glob("*/facts.json"))}


FACTS = _facts()
JOINS = [(v, n) for v, cases in FACTS.items() for n, c in sorted(cases.items()) if n.startswith("join") and "error" not in c]
VIRTUAL = [(v, n) for v, n in JOINS if n in ("join_v3", "join_v4")]


def _cp(version: str, name: str) -> Path:
    return MATRIX / version / FACTS[version][name]["checkpoint"]


def _value(v: Any) -> Any:
    """A decoded value in the facts' JSON form (timestamps as epoch µs)."""
    if isinstance(v, dt.datetime):
        return round(v.timestamp() * 1_000_000)
    return v


def _api_rows(table, drop: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    names = [c.name for c in table.columns]
    return [{n: _value(x) for n, x in zip(names, r, strict=True) if n not in drop} for r in table.rows]


def _spark_rows(rows: list[dict[str, Any]], drop: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    out = []
    for r in rows:
        d = {"partition_id": r["partition_id"]}
        for part in ("key", "value"):
            d.update({f"{part}.{k}": v for k, v in (r.get(part) or {}).items() if f"{part}.{k}" not in drop})
        out.append(d)
    return out


def _same(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> bool:
    return sorted(json.dumps(x, sort_keys=True) for x in a) == sorted(json.dumps(x, sort_keys=True) for x in b)


def _store_facts(version: str, name: str, **options: str) -> dict[str, Any] | None:
    for s in FACTS[version][name].get("stores", []):
        if all(s["options"].get(k) == v for k, v in options.items()):
            return s
    return None


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([STREAMWATCH, "state", *args], capture_output=True, text=True, timeout=120)


def _event_time_is_the_rows(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        ts = next(v for k, v in r.items() if k.startswith("value.") and k.endswith("ts"))
        assert r["key.__event_time"] == ts, r


def test_the_matrix_has_joins_of_every_format():
    names = {n for _, n in JOINS}
    assert {"join", "join_rocks", "join_v3", "join_v4"} <= names, names
    assert {v[:3] for v, _ in JOINS} >= {"3.5", "4.0", "4.1", "4.2", "4.3"}


@pytest.mark.parametrize(("version", "name"), VIRTUAL, ids=[f"{v}-{n}" for v, n in VIRTUAL])
def test_the_cli_reads_both_sides_of_a_virtual_column_family_join(version, name):
    r = _run(str(_cp(version, name)), "--json", "--limit", "0")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    tables = {t["store"]: t for t in doc["tables"]}
    assert set(tables) == {"left", "right"}
    for side, t in tables.items():
        assert not t["findings"], t["findings"]
        assert t["operator_name"] == "symmetricHashJoin" and t["total_rows"] == len(t["rows"])
        names = [c["name"] for c in t["columns"]]
        rows = [dict(zip(names, row, strict=True)) for row in t["rows"]]
        # the same query wrote the same buffered rows in format 2 (join_rocks): Spark's rows
        reference = _store_facts(version, "join_rocks", joinSide=side) or _store_facts(version, name, joinSide=side)
        assert reference is not None and "rows" in reference
        ours = [{k: (_value(dt.datetime.fromisoformat(v)) if k.endswith("ts") else v) for k, v in row.items()
                 if k not in ("value.matched", "key.__event_time")} for row in rows]
        assert _same(ours, _spark_rows(reference["rows"])), (ours, reference["rows"])
        if name == "join_v4":
            assert "key.__event_time" in names
            _event_time_is_the_rows([{k: (_value(dt.datetime.fromisoformat(v)) if k.endswith("ts") else v)
                                      for k, v in row.items()} for row in rows])
        own = _store_facts(version, name, joinSide=side)
        if own is not None and "rows" in own:  # Spark's own reader of this format: every column it gets right
            assert t["total_rows"] == own["count"]
            drop = ("key.__event_time",)
            theirs = _spark_rows(own["rows"], drop)
            assert _same(ours, theirs)


def test_spark_43_joinside_reader_misreads_the_v4_event_time():
    """What the facts hold for format 4 (see module docstring): Spark's ``__event_time`` is the
    key string's bytes read as a long, ours the timestamp the row is filed under."""
    own = _store_facts("4.3.0", "join_v4", joinSide="left")
    if own is None or "rows" not in own:
        pytest.skip("no Spark 4.3 joinSide rows for format 4")
    for r in own["rows"]:
        key = r["key"]["field0"].encode()
        assert r["key"]["__event_time"] == int.from_bytes(key.ljust(8, b"\0"), "little"), r
    (t,) = read_state(str(_cp("4.3.0", "join_v4")), store="left")
    _event_time_is_the_rows(_api_rows(t))


@pytest.mark.parametrize(("version", "name"), VIRTUAL, ids=[f"{v}-{n}" for v, n in VIRTUAL])
def test_store_default_of_a_virtual_column_family_join_prints_no_values(version, name):
    for extra in ((), ("--json",), ("--csv",)):
        r = _run(str(_cp(version, name)), "--store", "default", *extra)
        assert r.returncode == 4, (r.stdout, r.stderr)
        assert r.stdout == ""
        assert "column families" in r.stderr and "left" in r.stderr
    with pytest.raises(StateReadError):
        read_state(str(_cp(version, name)), store="default")


@pytest.mark.parametrize(("version", "name"), VIRTUAL, ids=[f"{v}-{n}" for v, n in VIRTUAL])
def test_column_families_are_the_format_2_stores_spark_read(version, name):
    cp = str(_cp(version, name))
    for side in ("left", "right"):
        kwi = _store_facts(version, "join_rocks", storeName=f"{side}-keyWithIndexToValue")
        assert kwi is not None and "rows" in kwi
        if name == "join_v3":
            for store in ("keyToNumValues", "keyWithIndexToValue"):
                (t,) = read_state(cp, store=f"{side}-{store}")
                ref = _store_facts(version, "join_rocks", storeName=f"{side}-{store}")
                assert ref is not None and not t.findings
                assert _same(_api_rows(t), _spark_rows(ref["rows"])) and t.total_rows == ref["count"]
        else:
            (t,) = read_state(cp, store=f"{side}-keyWithTsToValues")
            assert not t.findings
            rows = _api_rows(t)
            _event_time_is_the_rows(rows)
            assert _same([{k: v for k, v in r.items() if k != "key.__event_time"} for r in rows],
                         _spark_rows(kwi["rows"], ("key.index",)))  # the matched flags too
            (idx,) = read_state(cp, store=f"{side}-tsWithKey")
            assert not idx.findings
            assert sorted((r["key.field0"], r["key.__event_time"], r["partition_id"]) for r in _api_rows(idx)) == \
                sorted((r["key.field0"], r["key.__event_time"], r["partition_id"]) for r in rows)


def _spark_totals(version: str, name: str) -> dict[int, int]:
    return {p["batchId"]: p["stateOperators"][0]["numRowsTotal"] for p in FACTS[version][name]["progress"]
            if p["stateOperators"]}


SPARK_35 = [(v, n) for v, n in JOINS if v.startswith("3.5")]


@pytest.mark.parametrize(("version", "name"), SPARK_35, ids=[f"{v}-{n}" for v, n in SPARK_35])
def test_a_spark_35_join_is_known_by_its_store_folders(version, name):
    cp = _cp(version, name)
    (op,) = read_checkpoint(str(cp)).state
    assert op.name == "symmetricHashJoin" and op.metadata_version is None
    r = _run(str(cp))
    assert r.returncode == 0, r.stderr
    assert "store left" in r.stdout and "store right" in r.stdout
    for batch, total in _spark_totals(version, name).items():
        tables = read_state(str(cp), batch=batch)
        assert [t.store for t in tables] == ["left", "right"]
        assert not [f for t in tables for f in t.findings]
        assert sum(t.total_rows for t in tables) == total, f"batch {batch}"


@pytest.mark.parametrize(("version", "name"), SPARK_35, ids=[f"{v}-{n}" for v, n in SPARK_35])
def test_a_spark_35_join_without_schema_files_is_not_guessed(version, name, tmp_path):
    cp = tmp_path / "cp"
    shutil.copytree(_cp(version, name), cp)
    for schema in cp.glob("state/0/*/*/_metadata/schema"):
        schema.unlink()
    with pytest.raises(StateReadError, match="no readable state schema file"):
        read_state(str(cp), store="left")
    r = _run(str(cp))
    assert r.returncode == 4 and r.stdout == "", r.stdout
    # the growth audit needs no schema: it counts entries
    (a,) = audit_state(str(cp))
    assert a.error is None and [p.rows for p in a.points] == list(_spark_totals(version, name).values())


BOUNDED = [(v, n) for v, cases in FACTS.items() for n, c in sorted(cases.items())
           if (n.startswith("join") or n == "bounded") and "error" not in c]


@pytest.mark.parametrize(("version", "name"), BOUNDED, ids=[f"{v}-{n}" for v, n in BOUNDED])
def test_bounded_state_is_never_called_growing(version, name):
    audits = audit_state(str(_cp(version, name)))
    assert [a.verdict for a in audits] == ["bounded"]
    assert "state-growing" not in {f.code for f in audit_findings(audits)}


@pytest.mark.parametrize(("version", "name"), JOINS, ids=[f"{v}-{n}" for v, n in JOINS])
def test_a_join_ending_on_a_data_batch_is_not_called_growing(version, name, tmp_path):
    """The checkpoint as it was after the last batch that read data (before the no-data batch
    that evicted): rows still rise, but the files show rows evicted."""
    progress = FACTS[version][name]["progress"]
    last_data = max(p["batchId"] for p in progress if p["numInputRows"])
    cp = tmp_path / "cp"
    shutil.copytree(_cp(version, name), cp)
    _cut(cp, last_data)
    (a,) = audit_state(str(cp))
    totals = _spark_totals(version, name)
    assert [(p.batch_id, p.rows) for p in a.points] == [(b, totals[b]) for b in sorted(totals) if b <= last_data]
    assert a.verdict == "bounded", a
    assert "state-growing" not in {f.code for f in audit_findings([a])}


# --------------------------------------------------------------------------- a one-sided leak


def _delta(puts: list[bytes], deletes: list[bytes]) -> bytes:
    """An HDFS-backed store delta file (lz4): puts (value: 8 zero bytes) then deletes."""
    body = b"".join(struct.pack(">i", len(k)) + k + struct.pack(">i", 8) + bytes(8) for k in puts)
    body += b"".join(struct.pack(">i", len(k)) + k + struct.pack(">i", -1) for k in deletes)
    return lz4java(body + struct.pack(">i", -1))


def _cut(cp: Path, last: int) -> None:
    """``cp`` as it was after batch ``last``: later log entries and state versions gone."""
    for log in ("offsets", "commits"):
        for f in (cp / log).iterdir():
            if f.name.isdigit() and int(f.name) > last:
                f.unlink()
    for f in (cp / "state").rglob("*.delta"):
        if int(f.name.split(".")[0]) > last + 1:
            f.unlink()


def _extend(cp: Path, batches: int, left: tuple[int, int], right: tuple[int, int]) -> None:
    """``batches`` more batches of the HDFS join at ``cp``: per batch, partition 0's left and
    right keyWithIndexToValue stores put ``side[0]`` new keys and delete ``side[1]`` of the keys
    they put before (the other stores: empty deltas). The audit counts keys only."""
    last = max(int(f.name) for f in (cp / "commits").iterdir() if f.name.isdigit())
    put: dict[str, list[bytes]] = {"left": [], "right": []}
    for b in range(last + 1, last + 1 + batches):
        for log in ("offsets", "commits"):
            shutil.copyfile(cp / log / str(last), cp / log / str(b))
        for store in (cp / "state" / "0").glob("*/*-*"):
            side, kind = store.name.split("-", 1)
            puts: list[bytes] = []
            deletes: list[bytes] = []
            if store.parent.name == "0" and kind == "keyWithIndexToValue":
                n_put, n_del = left if side == "left" else right
                puts = [f"{side}-{b}-{i}".encode().ljust(16, b"\0") for i in range(n_put)]
                deletes, put[side] = put[side][:n_del], put[side][n_del:] + puts
            (store / f"{b + 1}.delta").write_bytes(_delta(puts, deletes))


def test_a_join_whose_one_side_never_evicts_is_growing(tmp_path):
    cp = tmp_path / "cp"
    shutil.copytree(_cp("3.5.7", "join"), cp)
    _cut(cp, 1)  # before Spark's first eviction: from there on, the left side never evicts
    _extend(cp, 8, left=(3, 0), right=(3, 3))  # left keeps every row, right evicts as it buffers
    (a,) = audit_state(str(cp))
    assert a.verdict == "growing" and a.growing_parts == ("left",), a
    (f,) = [f for f in audit_findings([a]) if f.code == "state-growing"]
    assert "the left side buffers more rows and evicts none" in f.message


def test_format_4_rows_sharing_key_and_event_time_are_one_list():
    """Two rows of one side with the same key and event time: one ``keyWithTsToValues`` entry,
    its values joined by RocksDB's merge delimiter — each decoded; anything else is an error."""
    from streamwatch.checkpoint.fs import open_storage
    from streamwatch.state import rocksdb
    from streamwatch.state.join import key_decoder, values_decoder
    from streamwatch.state.schema import parse_schema_file
    from streamwatch.state.unsaferow import RowError

    cp = _cp("4.3.0", "join_v4")
    (schema_file,) = (cp / "state" / "0" / "_stateSchema" / "default").iterdir()
    cf = next(c for c in parse_schema_file(schema_file.read_bytes()) if c.name == "left-keyWithTsToValues")
    storage, root = open_storage(str(cp / "state" / "0" / "0"))
    rows, rep = rocksdb.load(storage, root, 4)
    prefix = dict(rep.cf_mapping)[cf.name].to_bytes(2, "little")
    key, value = next((k, v) for k, v in rows.items() if k[:2] == prefix)
    decode = values_decoder(cf, 4)
    (one,) = decode(value)
    assert decode(value + b"," + value) == [one, one]
    assert key_decoder(cf)(key)[0] == one[0]  # the join key is the row's key column
    for broken in (value + value, value + b",", value[:-1]):
        with pytest.raises(RowError):
            decode(broken)
