"""`streamwatch compat` on a checkpoint Spark writes in this run: the prediction per kind of
change, and Spark's own answer (--verify) on a temporary copy agrees with it."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from streamwatch.cli import main
from tests.ops import compat_queries as cq
from tests.ops.conftest import session_confs

pytestmark = pytest.mark.spark

#: change → expected verdict (exit status 0 compatible, 1 allowed, 3 incompatible)
CHANGES = {
    "base": "compatible",
    "add_filter": "compatible",
    "rename": "compatible",
    "max_files": "compatible",
    "key_type": "incompatible",
    "add_aggregate": "incompatible",
    "remove_aggregate": "incompatible",
    "add_dedup": "incompatible",
    "add_source": "incompatible",
    "output_mode": "incompatible",
    "swap_sources": "incompatible",
    "sink_path": "allowed",
    "shuffle_partitions": "allowed",
    "watermark": "allowed",

    "rocksdb": "allowed",
}
EXIT = {"compatible": 0, "allowed": 1, "incompatible": 3}
RESTORE = ("spark.sql.shuffle.partitions", "spark.sql.streaming.stateStore.providerClass")


#: landed files' modification time: one second apart in landing order, an hour ago. Spark's file
#: source reads a listing oldest first (``maxFilesPerTrigger`` 1); files written within the
#: same millisecond were read in directory order, so which event times a batch saw, and whether
#: the watermark moved after the last one (a no-data batch), changed from run to run.
_MTIME0 = time.time() - 3600


def _land(folder: Path, start: int, n: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(start, start + n):
        rows = [{"k": f"k{j % 2}", "v": i * 10 + j, "ts": f"2024-01-01T00:{(i * 20) // 60:02d}:{(i * 20) % 60:02d}"} for j in range(3)]
        f = folder / f"f{i:03d}.json"
        f.write_text("\n".join(json.dumps(r) for r in rows))
        os.utime(f, (_MTIME0 + i, _MTIME0 + i))


@pytest.fixture(scope="module")
def checkpoint(spark, tmp_path_factory):
    """The base query run over 2 files per source, then one more file landed in each source so
    a restart has a batch to run (state is loaded, schemas checked)."""
    root = tmp_path_factory.mktemp("compat")
    cq.PATHS.update({k: str(root / k) for k in ("a", "b", "c")})
    cq.PATHS["out"], cq.PATHS["out2"] = str(root / "out"), str(root / "out2")
    for k in ("a", "b", "c"):
        _land(root / k, 0, 2)
    cp = root / "out" / "_checkpoint"
    q = cq.base(spark).option("checkpointLocation", str(cp)).trigger(availableNow=True).start()
    q.awaitTermination(180)
    assert q.exception() is None
    # batches 0 and 1 read f000 then f001 of each source; the watermark moved after batch 1,
    # so Spark ran a no-data batch 2 with batch 1's offsets (the restart's getBatch reads nothing)
    offsets = [(cp / "offsets" / str(b)).read_text().splitlines()[2:] for b in range(3)]
    assert offsets == [['{"logOffset":0}'] * 2, ['{"logOffset":1}'] * 2, ['{"logOffset":1}'] * 2], offsets
    assert not (cp / "offsets" / "3").exists() and (cp / "commits" / "2").exists()
    for k in ("a", "b", "c"):
        _land(root / k, 2, 1)
    return cp


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_prediction_and_spark_agree(spark, checkpoint, unchanged, change):
    unchanged(checkpoint.parent)
    with session_confs(spark, {k: spark.conf.get(k) for k in RESTORE}):
        r = CliRunner().invoke(main, ["compat", str(checkpoint), "--query", f"tests.ops.compat_queries:{change}", "--verify", "--json"])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    doc = json.loads(r.stdout)
    assert doc["schema"] == "streamwatch.compat/1"
    assert doc["verdict"] == CHANGES[change], doc["rules"]
    assert r.exit_code == EXIT[CHANGES[change]]
    assert doc["spark"]["agrees"], doc["spark"]
    resumed = doc["spark"]["restarted"] and doc["spark"]["resumed_own_offsets"]
    assert resumed == (CHANGES[change] != "incompatible"), doc["spark"]
    if change == "swap_sources":
        # the last batch (a no-data batch) read no file: Spark restarts without error, and each
        # source resumes the other's file log; --verify tells from what the sources resumed
        assert doc["spark"]["restarted"] is True and doc["spark"]["error"] is None, doc["spark"]
        folders = [Path(s["logged_folders"][0].removeprefix("file://")).name for s in doc["spark"]["sources"]]
        assert folders == ["a", "b"] and [s["own"] for s in doc["spark"]["sources"]] == [False, False], doc["spark"]
        assert doc["spark"]["mismatch"].startswith("source 0 FileStreamSource[") and "/b]" in doc["spark"]["mismatch"]
    elif doc["spark"]["restarted"]:
        assert all(s["own"] for s in doc["spark"]["sources"]) and len(doc["spark"]["sources"]) == 2, doc["spark"]
    # unnamed sources: each known to the checkpoint by its index, the sources/<id> folder Spark wrote
    ids = [s["source_id"] for s in doc["spark"]["sources"]]
    assert all((checkpoint / "sources" / i).is_dir() for i in ids) and ids == [str(s["index"]) for s in doc["spark"]["sources"]]


def test_swap_sources_refused_when_the_last_batch_read_them(spark, checkpoint, tmp_path, unchanged):
    """The checkpoint as the query left it before its no-data batch 2 (a copy without
    offsets/2 and commits/2): the last batch read a file from each source, so on restart
    Spark lists batch 1's files from each source log again (getBatch) and refuses the other
    source's folder; --verify reports the refusal and agrees with the prediction."""
    unchanged(checkpoint.parent)
    cp = tmp_path / "_checkpoint"
    shutil.copytree(checkpoint, cp)
    for log in ("offsets", "commits"):
        (cp / log / "2").unlink()
        (cp / log / ".2.crc").unlink(missing_ok=True)
    with session_confs(spark, {k: spark.conf.get(k) for k in RESTORE}):
        r = CliRunner().invoke(main, ["compat", str(cp), "--query", "tests.ops.compat_queries:swap_sources", "--verify", "--json"])
    assert r.exit_code == 3, r.output
    doc = json.loads(r.stdout)
    assert doc["verdict"] == "incompatible"
    assert doc["spark"]["restarted"] is False and "Wrong basePath" in doc["spark"]["error"], doc["spark"]
    assert doc["spark"]["agrees"] is True and doc["spark"]["sources"] == []


def test_text_report_names_the_rule_and_file(spark, checkpoint, unchanged):
    unchanged(checkpoint.parent)
    r = CliRunner().invoke(main, ["compat", str(checkpoint), "--query", "tests.ops.compat_queries:key_type"])
    assert r.exit_code == 3
    assert "INCOMPATIBLE" in r.output and "state 0 key schema" in r.output and "_metadata/schema" in r.output


def test_bad_query_spec(spark, checkpoint, tmp_path, unchanged):
    unchanged(checkpoint.parent)
    unchanged(tmp_path)
    r = CliRunner().invoke(main, ["compat", str(checkpoint), "--query", "tests.ops.compat_queries:not_a_writer"])
    assert r.exit_code == 2 and "not a DataStreamWriter" in r.output
    r = CliRunner().invoke(main, ["compat", str(checkpoint), "--query", "nope"])
    assert r.exit_code == 2
    r = CliRunner().invoke(main, ["compat", str(tmp_path / "missing"), "--query", "a:b"])
    assert r.exit_code == 4
    assert "Examples:" in CliRunner().invoke(main, ["compat", "--help"]).output


def _compat_json(*args: str):
    r = CliRunner().invoke(main, ["compat", *args, "--json"])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    return r, (json.loads(r.stdout) if r.stdout.strip().startswith("{") else None)


def test_bundled_layer_against_its_own_and_another_checkpoint(flights_run, unchanged):
    """`--pipeline flights --layer gold`: the layer's writer as `run` starts it (not started
    here), compared with gold's own checkpoint (compatible; Spark restarts a copy) and with
    silver's (incompatible: no state for gold's aggregation; Spark refuses a copy)."""
    _runner, ws = flights_run
    cps = ws.root / "checkpoints" / "flights"
    unchanged(cps)
    unchanged(ws.root / "tables" / "flights")
    r, doc = _compat_json(str(cps / "gold"), "--pipeline", "flights", "--layer", "gold", "--verify")
    assert r.exit_code == 0, (r.output, doc and doc["rules"])
    assert doc["verdict"] == "compatible"
    assert doc["spark"]["restarted"] is True and doc["spark"]["agrees"] is True, doc["spark"]

    r, doc = _compat_json(str(cps / "silver"), "--pipeline", "flights", "--layer", "gold", "--workspace", str(ws.root), "--verify")
    assert r.exit_code == 3, r.output
    assert doc["verdict"] == "incompatible"
    assert any(rule["verdict"] == "incompatible" and rule["rule"].startswith("state") for rule in doc["rules"]), doc["rules"]
    assert doc["spark"]["restarted"] is False and doc["spark"]["agrees"] is True, doc["spark"]


def test_bundled_layer_usage_errors(spark, flights_run, unchanged):
    _runner, ws = flights_run
    gold = unchanged(ws.root / "checkpoints" / "flights" / "gold")
    for args, why in (
        (["--pipeline", "flights"], "either --query"),
        (["--pipeline", "flights", "--layer", "gold", "--query", "a:b"], "either --query"),
        (["--pipeline", "flights", "--layer", "platinum"], "no layer 'platinum'"),
        (["--pipeline", "nope", "--layer", "gold"], "unknown pipeline 'nope'"),
    ):
        r = CliRunner().invoke(main, ["compat", str(gold), *args])
        assert r.exit_code == 2 and why in r.output, (args, r.output)
