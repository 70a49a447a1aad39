"""transformWithStateInPandas state across batches on every Spark that runs it (4.0 to 4.3, the
version matrix's ``tws``/``tws_avro`` cases: ``tests/state/tws_queries.py`` ``write_tws``),
held against what that Spark reported (``facts.json``): every state variable's rows equal its
``statestore`` source's rows (every struct column flattened: ``list_element.*``,
``user_map_key.*``…); the list state, appended to every batch — RocksDB merges, whose operands
RocksDB joins with ``,`` — holds after every batch exactly the elements the query appended;
the rows Spark counts (``numRowsTotal``) are the keys of the state variables, per partition the
snapshot zip's own ``numKeys``. Also a store rebuilt from changelogs (merges among them) before
its first zip reads the same rows. No JVM — but for one oracle (marked ``spark``) that writes
lists whole (``put``), appended in bulk (``appendList``) and element by element, with either
merge operator version (the delimiter between elements: ``,`` or nothing) and encoding, and
holds them against the installed pyspark's ``statestore`` rows."""

from __future__ import annotations

import datetime as dt
import io
import json
import shutil
import struct
from collections import Counter
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from streamwatch.checkpoint.fs import open_storage
from streamwatch.state import read_state, rocksdb
from streamwatch.state.audit import audit_state
from streamwatch.state.tws import split_values
from streamwatch.state.tws_reader import count_rows
from streamwatch.state.unsaferow import RowError
from tests.helpers.spark_codecs import lz4java

MATRIX = Path(__file__).resolve().parent.parent / "fixtures" / "matrix"
NAMES = ("tws", "tws_avro")


def _cases() -> list[tuple[str, str, dict[str, Any]]]:
    out = []
    for f in sorted(MATRIX.glob("*/facts.json")):
        facts = json.loads(f.read_text())
        for name in NAMES:
            case = facts["cases"].get(name)
            if case and "error" not in case:
                out.append((facts["spark"], name, case))
    return out


CASES = _cases()
IDS = [f"{v}-{n}" for v, n, _ in CASES]


def test_every_spark_from_4_0_ran_both_encodings():
    got = {(".".join(v.split(".")[:2]), n) for v, n, _ in CASES}
    assert {(v, n) for v in ("4.0", "4.1", "4.2", "4.3") for n in NAMES} <= got, sorted(got)


def _cp(version: str, case: dict[str, Any]) -> Path:
    return MATRIX / version / case["checkpoint"]


def _norm(v: Any) -> Any:
    """The generator's JSON form of a value (scripts/version_matrix.py ``norm``)."""
    if isinstance(v, dt.datetime):
        return round(v.timestamp() * 1_000_000)
    if isinstance(v, dict):
        return {str(k): _norm(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_norm(x) for x in v]
    return v


def _spark(row: dict[str, Any]) -> str:
    """One statestore row flattened as streamwatch names its columns: ``<column>.<field>``."""
    out: dict[str, Any] = {"partition_id": row["partition_id"]}
    for col, v in row.items():
        if col != "partition_id":
            out.update({f"{col}.{k}": x for k, x in (v or {}).items()})
    return json.dumps(out, sort_keys=True)


def _ours(table) -> list[str]:
    names = [c.name for c in table.columns]
    return sorted(json.dumps({n: _norm(x) for n, x in zip(names, r, strict=True)}, sort_keys=True) for r in table.rows)


def _batches(case: dict[str, Any]) -> list[int]:
    return sorted(p["batchId"] for p in case["progress"] if p["stateOperators"])


@pytest.mark.parametrize(("version", "name", "case"), CASES, ids=IDS)
def test_every_state_variable_is_spark_rows(version, name, case):
    stores = [s for s in case["stores"] if "rows" in s]
    assert {s["options"]["stateVarName"] for s in stores} == {"count", "seen", "text"}
    for s in stores:
        (t,) = read_state(str(_cp(version, case)), var=s["options"]["stateVarName"])
        assert not t.findings, t.findings
        assert t.encoding == ("avro" if name == "tws_avro" else "unsaferow")
        assert t.total_rows == len(t.rows) == s["count"]
        assert _ours(t) == sorted(_spark(r) for r in s["rows"]), s["options"]


def _by_key(table, value_col: str) -> dict[tuple[str, int], list[Any]]:
    names = [c.name for c in table.columns]
    out: dict[tuple[str, int], list[Any]] = {}
    for r in table.rows:
        d = dict(zip(names, r, strict=True))
        out.setdefault((d["key.key"], d["partition_id"]), []).append(_norm(d[value_col]))
    return out


@pytest.mark.parametrize(("version", "name", "case"), CASES, ids=IDS)
def test_the_list_state_after_every_batch_of_merges(version, name, case):
    """``seen`` gets one element per input row of a key, every batch (a merge): after each
    batch each key's list holds as many elements as its ``count`` says, every element kept
    from the batch before plus the new ones, and after the last batch Spark's own rows."""
    cp = str(_cp(version, case))
    before: dict[tuple[str, int], list[Any]] = {}
    sizes = []
    for b in _batches(case):
        tables = {t.variable: t for t in read_state(cp, batch=b)}
        assert not [f for t in tables.values() for f in t.findings], b
        counts = {k: v[0] for k, v in _by_key(tables["count"], "value.n").items()}
        seen = _by_key(tables["seen"], "list_element.value")
        assert {k: len(v) for k, v in seen.items()} == counts, f"batch {b}"
        for k, old in before.items():
            assert Counter(map(json.dumps, old)) <= Counter(map(json.dumps, seen[k])), f"batch {b} lost {k}'s elements"
        # one map entry per distinct v a key has seen (the query's v are distinct per key)
        assert {k: len(v) for k, v in _by_key(tables["text"], "user_map_value.d").items()} == counts
        before = seen
        sizes.append(tables["seen"].total_rows)
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1], sizes
    spark = next(s for s in case["stores"] if s["options"]["stateVarName"] == "seen")
    assert sum(len(v) for v in before.values()) == spark["count"]


def _partitions(cp: Path) -> list[Path]:
    return sorted(p for p in (cp / "state" / "0").iterdir() if p.name.isdigit())


def _conf(cp: Path) -> dict[str, str]:
    return json.loads((cp / "offsets" / "0").read_text().split("\n")[1])["conf"]


@pytest.mark.parametrize(("version", "name", "case"), CASES, ids=IDS)
def test_list_values_are_elements_joined_by_the_merge_delimiter(version, name, case):
    """The raw bytes: a ``seen`` value after several batches (one merge a batch) is that many
    size-prefixed elements with the store's merge delimiter between two — ``,`` where the
    offsets conf has no ``mergeOperatorVersion`` (Spark 4.0, 4.1), nothing where it is 2
    (Spark 4.2+) — whether the zip's OPTIONS file or the conf names it."""
    cp = _cp(version, case)
    storage, root = open_storage(str(cp))
    want = b"" if version >= "4.2" else b","
    assert rocksdb.merge_delimiter(_conf(cp)) == want
    last = _batches(case)[-1] + 1
    joined = 0
    for part in _partitions(cp):
        for given in (None, want):
            rows, rep = rocksdb.load(storage, str(part), last, merge_delimiter=given)
            assert rep.merge_delimiter == want
            seen = dict(rep.cf_mapping)["seen"].to_bytes(2, "little")
            for k, v in rows.items():
                if k[:2] != seen:
                    continue
                spans = split_values(v, want)
                assert spans[0][0] == 4 and spans[-1][1] == len(v)
                assert all(v[end:nxt - 4] == want for (_, end), (nxt, _) in pairwise(spans))
                joined += len(spans) > 1
    assert joined, "no list-state value held more than one element"


def test_list_values_split_as_spark_walks_them():
    """Spark's reader skips the delimiter's length after every element: with ``,`` each
    element but the last is followed by one, with nothing they abut — and an element whose
    size starts with the ``,`` byte (44 bytes: an Avro row) is no delimiter there."""
    one = struct.pack("<i", 3) + b"\x00ab"
    big = struct.pack("<i", 44) + b"\x00" * 44  # its size's first byte is ','
    assert split_values(one, b",") == split_values(one, b"") == [(4, 7)]
    assert split_values(one + b"," + one, b",") == [(4, 7), (12, 15)]
    assert split_values(one + one, b"") == [(4, 7), (11, 14)]
    assert split_values(big + big, b"") == [(4, 48), (52, 96)]
    assert split_values(big + b"," + big, b",") == [(4, 48), (53, 97)]
    for bad, delim in ((b"", b""), (one + one, b","), (one + b";" + one, b","), (one + b",", b","), (one[:-1], b""),
                       (struct.pack("<i", 0), b""), (one + b"," + one[:5], b","), (one + b"," + one, b"")):
        with pytest.raises(RowError):
            split_values(bad, delim)


@pytest.mark.parametrize(("version", "name", "case"), CASES, ids=IDS)
def test_rows_spark_counts_are_the_state_variables_keys(version, name, case):
    """Per partition and version the zip's ``numKeys`` (Spark's own count, internal column
    families apart), summed over partitions ``numRowsTotal`` of that batch's progress."""
    cp = _cp(version, case)
    storage, root = open_storage(str(cp))
    totals = {p["batchId"]: p["stateOperators"][0]["numRowsTotal"] for p in case["progress"] if p["stateOperators"]}
    for b, spark_total in totals.items():
        ours = 0
        for part in _partitions(cp):
            rows, rep = rocksdb.load(storage, str(part), b + 1)
            n = count_rows(rows, rep.cf_mapping)
            assert rep.snapshot == b + 1 and n == rep.num_keys, (b, part.name)
            assert set(rep.internal_cfs) == {name for name, _ in rep.cf_mapping if name.startswith("$")}
            ours += n
        assert ours == spark_total, f"batch {b}"
    (a,) = audit_state(str(cp))
    assert {p.batch_id: p.rows for p in a.points} == totals


def _write_lists(spark, root: Path, encoding: str, merge_version: str, changelog: bool) -> Path:
    """``transformWithStateInPandas`` keeping per key: a list ``put`` whole every batch, one
    grown by ``appendList`` and one by ``appendValue`` (RocksDB merges), one ``put`` with a
    TTL, and two of strings whose Avro elements are 44 bytes (a size whose first byte is the
    ``,`` byte)."""
    import pandas as pd
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    from tests.helpers import state_queries as Q

    class Lists(StatefulProcessor):
        def init(self, handle):
            n, s = StructType([StructField("x", LongType())]), StructType([StructField("s", StringType())])
            self.whole = handle.getListState("whole", n)
            self.bulk = handle.getListState("bulk", n)
            self.one = handle.getListState("one", n)
            self.ttl = handle.getListState("ttl", n, ttlDurationMs=3_600_000)
            self.wide = handle.getListState("wide", s)
            self.wide_bulk = handle.getListState("wide_bulk", s)

        def handleInputRows(self, key, rows, timerValues):
            vs = [int(v) for pdf in rows for v in pdf["v"]]
            self.whole.put([(1,), (2,), (len(vs),)])
            self.bulk.appendList([(v,) for v in vs] + [(-1,)])
            for v in vs:
                self.one.appendValue((v,))
            self.ttl.put([(10,), (20,)])
            self.wide.put([("a" * 39,), ("b" * 39,), ("c" * 7,)])  # 39 characters: a 44-byte Avro element
            self.wide_bulk.appendList([("d" * 39,), (str(len(vs)) * 39,)])
            yield pd.DataFrame({"key": [key[0]], "n": [len(vs)]})

        def close(self):
            pass

    src = Q.land_events(root / "in", Q.default_batches(3, 3))
    extra = {"spark.sql.streaming.stateStore.encodingFormat": encoding, "spark.sql.streaming.noDataMicroBatches.enabled": "false",
             rocksdb.MERGE_OPERATOR_CONF: merge_version}
    with Q.confs(spark, Q.ROCKSDB, changelog=changelog, extra=extra):
        df = Q.stream(spark, src).groupBy("key").transformWithStateInPandas(
            Lists(), "key STRING, n LONG", "update", "ProcessingTime")
        return Q.run(df, root / "cp")


@pytest.mark.spark
@pytest.mark.parametrize(("encoding", "merge_version", "changelog"),
                         [("unsaferow", "1", True), ("avro", "2", True), ("avro", "2", False)])
def test_lists_put_and_appended_are_spark_rows(spark, tmp_path, unchanged, encoding, merge_version, changelog):
    cp = _write_lists(spark, tmp_path, encoding, merge_version, changelog)
    assert _conf(cp).get(rocksdb.MERGE_OPERATOR_CONF) == merge_version
    unchanged(cp)
    for var in ("whole", "bulk", "one", "ttl", "wide", "wide_bulk"):
        rows = spark.read.format("statestore").option("stateVarName", var).load(str(cp)).collect()
        theirs = sorted(_spark(_norm(r.asDict(recursive=True))) for r in rows)
        (t,) = read_state(str(cp), var=var)
        assert not t.findings, (var, t.findings)
        assert t.total_rows == len(theirs) > 0 and _ours(t) == theirs, var


def _changelog(records: list[tuple[int, bytes, bytes | None]]) -> bytes:
    """A RocksDB changelog v2 (``StateStoreChangelogWriterV2``) in Spark's lz4 framing:
    ``writeUTF("v2")``, records ``[type][int key length][key][int value length][value]``
    (a delete's value length −1), a 0 byte at the end."""
    out = io.BytesIO()
    out.write(struct.pack(">H", 2) + b"v2")
    for op, key, value in records:
        out.write(bytes([op]) + struct.pack(">i", len(key)) + key)
        out.write(struct.pack(">i", -1) if value is None else struct.pack(">i", len(value)) + value)
    out.write(b"\x00")
    return lz4java(out.getvalue())


PUT, DELETE, MERGE = 0x01, 0x10, 0x11


@pytest.mark.parametrize("spark_version", ["4.1", "4.2"])
def test_changelogs_before_the_first_zip_read_the_same_rows(tmp_path, spark_version):
    """Versions 1 and 2 rebuilt from changelogs alone (the zips Spark wrote for them swapped
    for changelogs holding the same changes: every list-state append a merge record, one per
    element) read as the zips did — merges joined by ``,`` (4.1) or nothing (4.2); the column
    family ids come from the first zip after them."""
    version, name, case = next((v, n, c) for v, n, c in CASES if n == "tws" and v.startswith(spark_version))
    src = _cp(version, case)
    delim = rocksdb.merge_delimiter(_conf(src))
    cp = shutil.copytree(src, tmp_path / "cp")
    storage, root = open_storage(str(src))
    for part in _partitions(cp):
        prev: dict[bytes, bytes] = {}
        for v in (1, 2):
            rows, rep = rocksdb.load(storage, str(src / "state" / "0" / part.name), v)
            seen = dict(rep.cf_mapping)["seen"].to_bytes(2, "little")
            recs: list[tuple[int, bytes, bytes | None]] = []
            for k, val in sorted(rows.items()):
                old = prev.get(k)
                if val == old:
                    continue
                if k[:2] == seen and (old is None or val.startswith(old + delim)):
                    new = val if old is None else val[len(old) + len(delim):]
                    recs += [(MERGE, k, new[s - 4:e]) for s, e in split_values(new, delim)]
                else:
                    recs.append((PUT, k, val))
            recs += [(DELETE, k, None) for k in sorted(set(prev) - set(rows))]
            assert any(op == MERGE for op, _, _ in recs)
            (part / f"{v}.zip").unlink()
            (part / f"{v}.changelog").write_bytes(_changelog(recs))
            prev = rows
    for b in (0, 1):
        for var in ("count", "seen", "text", "timers"):
            (want,) = read_state(str(src), var=var, batch=b)
            (got,) = read_state(str(cp), var=var, batch=b)
            assert not got.findings, got.findings
            assert [p.snapshot for p in got.partitions] == [None, None]
            assert _ours(got) == _ours(want), (var, b)
    totals = {p["batchId"]: p["stateOperators"][0]["numRowsTotal"] for p in case["progress"] if p["stateOperators"]}
    (a,) = audit_state(str(cp))
    assert {p.batch_id: p.rows for p in a.points} == totals
