"""Named sources (``DataStreamReader.name``, offsets log v2, Spark 4.2+) are looked up by
name, never by their line in ``offsets/N``: the checkpoint watch's per-batch input
(:class:`~streamwatch.analysis.batchio.SourceReader`), ``compat``'s source rules and the
sources of the analyzed plan ``compat`` reads from Spark.

Held against Spark's own account of the ``named`` checkpoints pyspark 4.2.0 and 4.3.0 wrote
(``tests/fixtures/matrix/<version>/named``, see ``test_named_matrix.py``): the ``name:{offset}``
lines of the ``offsets/N`` files and the ``sources/<name>/N`` logs Spark wrote, read here
directly as text, and each batch's ``numInputRows`` in ``facts.json``. Spark writes an
``OffsetMap``'s lines in its map's order ("refunds" before "orders", the reverse of the
query's), so a lookup by position pairs a source with another source's offset.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from streamwatch.analysis.batchio import SourceReader
from streamwatch.analysis.probe import Probe
from streamwatch.checkpoint.fs import LocalStorage
from streamwatch.checkpoint.ops.compat_rules import NewQuery, NewSource, check
from streamwatch.checkpoint.reader import read_checkpoint

MATRIX = Path(__file__).resolve().parent.parent / "fixtures" / "matrix"
VERSIONS = ("4.2.0", "4.3.0")
#: the folder each named source reads (scripts/version_matrix.py ``write_named``)
INPUT_OF = {"orders": "in_a", "refunds": "in_b"}


def _case(version: str) -> tuple[Path, dict]:
    facts = json.loads((MATRIX / version / "facts.json").read_text())["cases"]["named"]
    assert "error" not in facts, facts
    return MATRIX / version / facts["checkpoint"], facts


def _spark_offsets(cp: Path, batch_id: int) -> dict[str, int]:
    """Spark's ``offsets/<batch_id>``: source name → ``logOffset`` (the lines after the
    version and metadata lines, ``name:{"logOffset":N}``)."""
    lines = (cp / "offsets" / str(batch_id)).read_text().splitlines()
    assert lines[0] == "v2"
    out = {}
    for line in lines[2:]:
        name, offset = line.split(":", 1)
        out[name] = json.loads(offset)["logOffset"]
    return out


def _spark_log(cp: Path, name: str, log_id: int) -> list[str]:
    """Base names of the files Spark's ``sources/<name>/<log_id>`` lists."""
    lines = (cp / "sources" / name / str(log_id)).read_text().splitlines()
    return [json.loads(line)["path"].rsplit("/", 1)[-1] for line in lines[1:] if line.strip()]


def _rows(version: str, name: str, file: str) -> int:
    text = (MATRIX / version / "named" / INPUT_OF[name] / file).read_text()
    return sum(1 for line in text.splitlines() if line.strip())


def _inputs(cp_path: Path, batch_id: int) -> dict[str, list[str]]:
    cp = read_checkpoint(str(cp_path))
    prev = cp.offsets_for(batch_id - 1) if batch_id else None
    entry = cp.offsets_for(batch_id)
    assert entry is not None
    got = SourceReader(Probe(str(cp_path)), str(cp_path), file_sizes=False).inputs(entry, prev)
    return {s.source: [p.rsplit("/", 1)[-1] for p in s.paths] for s in got}


@pytest.mark.parametrize("version", VERSIONS)
def test_each_batch_reads_each_named_sources_own_log(version):
    cp, facts = _case(version)
    assert list(_spark_offsets(cp, 0)) == ["refunds", "orders"]  # map order, not the query's
    for p in facts["progress"]:
        b = p["batchId"]
        now = _spark_offsets(cp, b)
        before = _spark_offsets(cp, b - 1) if b else {}
        want = {name: [f for log_id in range(before.get(name, -1) + 1, end + 1) for f in _spark_log(cp, name, log_id)]
                for name, end in now.items()}
        got = _inputs(cp, b)
        assert got == want, (b, got, want)
        assert sum(_rows(version, n, f) for n, fs in got.items() for f in fs) == p["numInputRows"], b
    # batch 2: Spark moved orders' offset to 2 and left refunds' at 1
    assert _inputs(cp, 2) == {"orders": ["part-00002.json"], "refunds": []}


@pytest.mark.parametrize("version", VERSIONS)
def test_a_named_source_is_paired_with_its_own_previous_offset(version, tmp_path):
    """Built from Spark's files: ``offsets/1`` without its "refunds" line (as for a source
    that had no offset then: with source evolution, Spark 4.2+, a source added later), so
    the "orders" line moves to where "refunds" was. Batch 2 then reads all of refunds' log up
    to its offset (0 and 1) and orders' log batch 2 only — a lookup by position would pair
    refunds with orders' offset and orders with none."""
    src, _ = _case(version)
    cp = tmp_path / "cp"
    shutil.copytree(src, cp)
    off1 = (cp / "offsets" / "1").read_text().splitlines()
    (cp / "offsets" / "1").write_text("\n".join([*off1[:2], next(x for x in off1 if x.startswith("orders:"))]) + "\n")
    assert list(_spark_offsets(cp, 1)) == ["orders"] and list(_spark_offsets(cp, 2)) == ["refunds", "orders"]
    got = _inputs(cp, 2)
    assert got == {"refunds": _spark_log(cp, "refunds", 0) + _spark_log(cp, "refunds", 1),
                   "orders": _spark_log(cp, "orders", 2)}
    assert got == {"refunds": ["part-00000.json", "part-00001.json"], "orders": ["part-00002.json"]}


def _logged_folder(cp: Path, name: str) -> str:
    """The folder Spark's ``sources/<name>/0`` says the source read (the path as it was when
    Spark wrote the fixture)."""
    line = (cp / "sources" / name / "0").read_text().splitlines()[1]
    return json.loads(line)["path"].rsplit("/", 1)[0]


def _compat(cp_path: Path, sources: tuple[NewSource, ...]) -> dict[str, tuple[str, str | None]]:
    cp = read_checkpoint(str(cp_path), full=True)
    doc = check(cp, LocalStorage(), NewQuery(sources=sources, operators=(), sink_format="noop", sink_path=None,
                                             output_mode="update"))
    return {r["rule"]: (r["verdict"], r["checkpoint_file"]) for r in doc["rules"] if r["rule"].startswith("source")}


@pytest.mark.parametrize("version", VERSIONS)
def test_compat_matches_named_sources_by_name(version):
    cp, _ = _case(version)
    a, b = _logged_folder(cp, "orders"), _logged_folder(cp, "refunds")
    assert (a.rsplit("/", 1)[-1], b.rsplit("/", 1)[-1]) == ("in_a", "in_b")
    orders, refunds = NewSource("file", a, {"path": a}, "orders"), NewSource("file", b, {"path": b}, "refunds")
    for order in ((orders, refunds), (refunds, orders)):  # Spark pairs them by name: any order
        rows = _compat(cp, order)
        assert rows["source orders path"] == ("compatible", str(cp / "sources" / "orders"))
        assert rows["source refunds path"] == ("compatible", str(cp / "sources" / "refunds"))
        assert all(v == "compatible" for v, _ in rows.values()), rows
    # the names swapped: each name resumes the other folder's log
    swapped = _compat(cp, (NewSource("file", b, {}, "orders"), NewSource("file", a, {}, "refunds")))
    assert swapped["source orders path"] == ("incompatible", str(cp / "sources" / "orders"))
    assert swapped["source refunds path"] == ("incompatible", str(cp / "sources" / "refunds"))
    # a name the offsets log does not hold
    renamed = _compat(cp, (orders, NewSource("file", b, {}, "returns")))
    assert renamed["source returns"][0] == "incompatible" and renamed["source orders path"][0] == "compatible"


@pytest.mark.spark
def test_compat_reads_the_names_spark_gives_the_sources(spark, tmp_path):
    """The analyzed plan of a query with named sources (pyspark 4.2+) names each source; an
    unnamed one has none."""
    import pyspark

    if tuple(int(x) for x in pyspark.__version__.split(".")[:2]) < (4, 2):
        pytest.skip(f"pyspark {pyspark.__version__} has no DataStreamReader.name")
    from streamwatch.spark.compat import shape

    for d in ("a", "b", "c"):
        (tmp_path / d).mkdir()
    # names need this conf (4.2, 4.3), and with it every source must be named
    conf = "spark.sql.streaming.queryEvolution.enableSourceEvolution"
    was = spark.conf.get(conf, None)
    spark.conf.set(conf, "true")
    try:
        da = spark.readStream.schema("key STRING, value LONG").name("orders").json(str(tmp_path / "a"))
        db = spark.readStream.schema("key STRING, value LONG").name("refunds").json(str(tmp_path / "b"))
        named = shape(da.unionByName(db).writeStream.format("noop")).sources
    finally:
        if was is None:
            spark.conf.unset(conf)
        else:
            spark.conf.set(conf, was)
    unnamed = shape(spark.readStream.schema("key STRING, value LONG").json(str(tmp_path / "c")).writeStream.format("noop")).sources
    got = [(s.kind, Path(s.path or "").name, s.name) for s in (*named, *unnamed)]
    assert got == [("file", "a", "orders"), ("file", "b", "refunds"), ("file", "c", None)]
    assert [s.source_id(i) for i, s in enumerate(named)] == ["orders", "refunds"] and unnamed[0].source_id(0) == "0"
