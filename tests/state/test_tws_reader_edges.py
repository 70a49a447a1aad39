"""transformWithState state read from copies of a checkpoint Spark wrote
(``groupBy(key).transformWithStateInPandas``, RocksDB, unsaferow), damaged the ways a user's
copy can be: an encoding this reader does not decode, snapshot zips whose
``columnFamilyMapping`` lost the variables, a missing changelog. Each is
a one-line :class:`StateReadError` or a finding in the table, never a traceback; the
variables are also found from the schema file alone when the operator metadata lists none."""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from pathlib import Path

import pytest

from streamwatch.model.statestore import StateOperator
from streamwatch.state import StateReadError, read_state
from streamwatch.state.schema import DEFAULT_CF, ColumnFamilySchema
from streamwatch.state.tws_reader import is_tws, variable_names
from streamwatch.state.types import StructType

pytestmark = pytest.mark.spark


@pytest.fixture
def tws_copy(state_cps, tmp_path) -> Path:
    dst = tmp_path / "tws"
    shutil.copytree(state_cps["tws"], dst)
    return dst


def _set_conf(cp: Path, key: str, value: str) -> None:
    for f in (cp / "offsets").iterdir():
        if not f.name.isdigit():
            continue
        head, meta, *rest = f.read_text().split("\n")
        m = json.loads(meta)
        m["conf"][key] = value
        f.write_text("\n".join([head, json.dumps(m), *rest]))


def test_an_encoding_not_decoded_is_one_line(tws_copy):
    _set_conf(tws_copy, "spark.sql.streaming.stateStore.encodingFormat", "protobuf")
    with pytest.raises(StateReadError) as e:
        read_state(str(tws_copy), var="count")
    assert str(e.value) == "state/0: stateStore.encodingFormat=protobuf is not decoded (unsaferow and avro are)"


def test_zips_without_the_column_family_mapping(tws_copy):
    zips = [z for z in (tws_copy / "state" / "0").rglob("*.zip")]
    assert zips, "the RocksDB store wrote no snapshot zip"
    for z in zips:
        with zipfile.ZipFile(z) as src:
            entries = {n: src.read(n) for n in src.namelist()}
        head, _, body = entries["metadata"].partition(b"\n")
        meta = json.loads(body)
        meta["columnFamilyMapping"] = {}
        entries["metadata"] = head + b"\n" + json.dumps(meta).encode()
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as out:
            for n, data in entries.items():
                out.writestr(n, data)
        z.write_bytes(buf.getvalue())
    batch = max(int(p.name) for p in (tws_copy / "commits").iterdir() if p.name.isdigit())
    (t,) = read_state(str(tws_copy), var="count", batch=batch)
    unmapped = [f for f in t.findings if f.code == "state-variable-unmapped"]
    zipped = {p.partition for p in t.partitions if p.error}
    assert unmapped and zipped, t.findings
    assert all("no column family id for 'count'" in f.message and "\n" not in f.message for f in unmapped)


def test_a_missing_changelog_is_a_finding_per_partition(tws_copy):
    batch = max(int(p.name) for p in (tws_copy / "commits").iterdir() if p.name.isdigit())
    part = tws_copy / "state" / "0" / "0"
    version = batch + 1
    for f in list(part.iterdir()):
        if f.name.split("_")[0].split(".")[0] == str(version) and f.suffix in (".zip", ".changelog"):
            f.unlink()
    (t,) = read_state(str(tws_copy), var="seen", batch=batch)
    bad = [f for f in t.findings if f.code == "state-store-unreadable"]
    assert len(bad) == 1 and f"version {version}" in bad[0].message
    assert {p.partition for p in t.partitions if p.error} == {0}
    assert all(r[-1] != 0 for r in t.rows)  # rows of the other partitions are still read
    assert t.total_rows == len(t.rows) > 0


def test_variables_from_the_schema_file_when_metadata_has_none():
    e = StructType()
    cfs = [ColumnFamilySchema(DEFAULT_CF, e, e), ColumnFamilySchema("count", e, e),
           ColumnFamilySchema("$ttl_seen", e, e, "rangeScan"), ColumnFamilySchema("seen", e, e),
           ColumnFamilySchema("$procTimers_keyToTimestamp", e, e, "prefixScan")]
    op = StateOperator(0, "/cp/state/0", name="transformWithStateExec")
    assert is_tws(op) and not is_tws(StateOperator(1, "/cp/state/1", name="stateStoreSave"))
    assert variable_names(op) == []
    assert variable_names(op, cfs) == ["count", "seen", "timers"]
    assert variable_names(op, cfs[:2]) == ["count"]


def test_truncated_snapshot_zips_are_a_finding(tws_copy):
    batch = max(int(p.name) for p in (tws_copy / "commits").iterdir() if p.name.isdigit())
    part = tws_copy / "state" / "0" / "0"
    zips = sorted(part.glob("*.zip"))
    assert zips, "partition 0 has no snapshot zip"
    for z in zips:
        z.write_bytes(z.read_bytes()[: z.stat().st_size // 2])
    (t,) = read_state(str(tws_copy), var="count", batch=batch)
    bad = [f for f in t.findings if f.code == "state-store-unreadable"]
    assert bad and all("\n" not in f.message for f in bad)
    assert {p.partition for p in t.partitions if p.error} == {0}
    assert t.total_rows == len(t.rows)


def test_entries_that_do_not_fit_the_schema_are_counted_once(tws_copy):
    """The schema file claims the list state's ``ts`` is a string (same byte length, so the
    file stays well-formed): every entry's timestamp slot then reads as an offset far past
    the row — one finding with the first error, one with the count."""
    old, new = b'"name":"ts","type":"timestamp"', b'"name":"ts","type":"string"   '
    edited = 0
    for f in (tws_copy / "state" / "0" / "_stateSchema").rglob("*"):
        if f.is_file() and old in f.read_bytes():
            f.write_bytes(f.read_bytes().replace(old, new))
            edited += 1
    assert edited, "no schema file names the list state's ts field"
    batch = max(int(p.name) for p in (tws_copy / "commits").iterdir() if p.name.isdigit())
    (t,) = read_state(str(tws_copy), var="seen", batch=batch)
    bad = [f for f in t.findings if f.code == "state-row-undecodable"]
    assert len(bad) == 2, t.findings
    assert bad[0].message.startswith("seen partition ") and "runs past the row" in bad[0].message
    assert bad[1].message.endswith(" seen entries could not be decoded")
    assert t.rows == () and t.total_rows == 0
