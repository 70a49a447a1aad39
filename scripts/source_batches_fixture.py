"""Write checkpoints where a file source's own log batches are not the query's batches, with
the facts Spark itself reports about every batch — the generator of
``tests/fixtures/spark<MAJOR.MINOR>/source-batches/`` and the scenario
``tests/truth/test_source_batches_truth.py`` runs on the tests' SparkSession.

Two queries, files landed one step at a time (written beside the folder, then renamed in, so
the source never lists half a file), each step followed by ``processAllAvailable()`` (which
returns once a trigger finds nothing to do, i.e. after any no-data batch):

* ``windowed``: a JSON file source → 10-second event-time windows counted with a 10-second
  watermark (append mode, Parquet sink). Every landed file moves the watermark on, so Spark
  runs a data batch then a no-data batch: input rows 50, 0, 51, 0, … while the source's log
  gains one batch per file.
* ``union``: two JSON file sources unioned (a ``foreachBatch`` sink that counts the batch's
  rows per ``input_file_name()``: Spark's progress reports 0 rows for every source of a union
  batch where one side had no data); steps land a file in the first source only, in the
  second only, then one in each: batches that read one source.

Every file has its own row count, so a batch's ``numInputRows`` names the file it read.

Facts (``facts.json``): per query its checkpoint and sink folders (relative), the landing
folders of its sources (in the query's source order) and per executed batch (progress events
with an ``addBatch`` duration: idle progress events repeat a batch id) the rows read per source
(``numInputRows``: from the progress event, or for the union from ``input_file_name()``, with
the progress event's own numbers beside as ``progressNumInputRows``) and the files each source
read — the file landed in that step for that source when the batch read rows from it (one file
per source per step, and its row count is its own, so there is no choice).

Run with the pyspark whose checkpoints you want (not run by the tests)::

    python3 -m venv /tmp/venv35 && /tmp/venv35/bin/pip install pyspark==3.5.7
    /tmp/venv35/bin/python scripts/source_batches_fixture.py tests/fixtures/spark35/source-batches

The output folder is replaced. Absolute paths inside the checkpoints (sources/<i>/ entries,
the sink log) name where it was written; the facts name files by their base name.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

BASE_S = 1_700_000_000  # event times: epoch seconds
WINDOW_FILES = 4
SCHEMA = "ts TIMESTAMP, v INT"


def _land(folder: Path, name: str, rows: int, start_s: int) -> dict[str, Any]:
    """Write ``name`` with ``rows`` JSON lines (event times from ``start_s``) atomically."""
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder.parent / f".{folder.name}.{name}.tmp"
    lines = [json.dumps({"ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start_s + i % 30)), "v": i}) for i in range(rows)]
    tmp.write_text("\n".join(lines) + "\n")
    os.replace(tmp, folder / name)
    return {"name": name, "rows": rows}


def _executed(progress: list[Any]) -> dict[int, Any]:
    """Batch id → its progress, for batches that ran (an ``addBatch`` duration)."""
    out: dict[int, Any] = {}
    for p in progress:
        if "addBatch" in (p.get("durationMs") or {}):
            out[int(p["batchId"])] = p
    return out


def _source_order(progress: Any, landings: list[Path]) -> list[int]:
    """Index into ``landings`` of each of the progress event's sources (by description)."""
    order = []
    for s in progress["sources"]:
        desc = str(s["description"])
        hit = [i for i, d in enumerate(landings) if d.name in desc]
        assert len(hit) == 1, (desc, landings)
        order.append(hit[0])
    return order


#: per source (by index into the landings): the file landed in a step, or None
Landed = list[dict[str, Any] | None]


def _play(q: Any, landings: list[Path], steps: list[list[tuple[int, str, int, int]]]
          ) -> tuple[list[tuple[set[int], Landed]], dict[int, Any]]:
    """Land each step's files and let the query process them; stops the query. Returns per
    step (the batch ids it ran, the files it landed), and every executed batch's progress
    (indexed by batch id)."""
    played: list[tuple[set[int], Landed]] = []
    try:
        seen: set[int] = set()
        for step in steps:
            landed: Landed = [None] * len(landings)
            for i, fname, nrows, start in step:
                landed[i] = _land(landings[i], fname, nrows, start)
            q.processAllAvailable()
            ran = set(_executed(q.recentProgress)) - seen
            seen |= ran
            played.append((ran, landed))
        progress = _executed(q.recentProgress)
    finally:
        q.stop()
    assert q.exception() is None, q.exception()
    return played, progress


def _batch_rows(p: Any, landings: list[Path], read_files: dict[str, int] | None) -> tuple[list[int], list[int]]:
    """One batch's rows per source, and the rows per source its progress event reported.
    The first is ``read_files`` (``input_file_name()`` → rows, counted in ``foreachBatch``)
    summed per landing folder when given, else the progress event's own account."""
    reported = [0] * len(landings)
    for s, i in zip(p["sources"], _source_order(p, landings), strict=True):
        reported[i] = int(s["numInputRows"])
    if read_files is None:
        return reported, reported
    rows = [0] * len(landings)
    for path, n in read_files.items():
        hit = [i for i, d in enumerate(landings) if f"/{d.name}/" in path]
        assert len(hit) == 1, (path, landings)
        rows[hit[0]] += n
    return rows, reported


def _step_docs(name: str, ran: set[int], landed: Landed, progress: dict[int, Any], landings: list[Path],
               read: dict[int, dict[str, int]] | None) -> list[dict[str, Any]]:
    """The fixture's batch documents for one step's batches; checks each landed file was read
    whole by exactly one batch of its step. ``read``: ``foreachBatch``'s per-file counts by
    batch id, or None for the progress events' counts."""
    docs = []
    taken = [False] * len(landings)
    for b in sorted(ran):
        p = progress[b]
        rows, reported = _batch_rows(p, landings, None if read is None else read.get(b, {}))
        files: list[list[str]] = [[] for _ in landings]
        for i, n in enumerate(rows):
            if n:
                f = landed[i]
                assert f is not None and not taken[i] and f["rows"] == n, (name, b, i, n, landed)
                files[i] = [f["name"]]
                taken[i] = True
        doc: dict[str, Any] = {"batchId": b, "numInputRows": rows, "files": files, "watermarkMs": _watermark_ms(p)}
        if read is not None:
            doc["progressNumInputRows"] = reported
        docs.append(doc)
    assert all(t or f is None for t, f in zip(taken, landed, strict=True)), (name, "a landed file was not read in its step", landed)
    return docs


def _run(spark: Any, name: str, df: Any, root: Path, landings: list[Path],
         steps: list[list[tuple[int, str, int, int]]], *, by_file: bool = False) -> dict[str, Any]:
    """Start ``df`` as query ``name``, play ``steps`` (each: (source index, file name, rows,
    first event second) landed together), and return its facts.

    Without ``by_file``: a Parquet sink, rows per source from the progress events'
    ``numInputRows``. With ``by_file``: a ``foreachBatch`` sink counting each batch's rows per
    ``input_file_name()`` — Spark's own account of the files a batch read, for a union, whose
    progress reports 0 rows for every source when one side had no data (the plan's leaves
    then no longer match its sources)."""
    from pyspark.sql import functions as F

    cp, sink = root / "checkpoints" / name, root / "tables" / name
    read: dict[int, dict[str, int]] = {}
    if by_file:
        def record(batch: Any, batch_id: int) -> None:
            rows = batch.groupBy(F.input_file_name().alias("f")).count().collect()
            read[int(batch_id)] = {str(r["f"]): int(r["count"]) for r in rows}

        writer = df.writeStream.foreachBatch(record).option("checkpointLocation", str(cp))
    else:
        writer = df.writeStream.format("parquet").option("path", str(sink)).option("checkpointLocation", str(cp))
    q = writer.outputMode("append").queryName(name).start()
    played, progress = _play(q, landings, steps)
    batches = [doc for ran, landed in played
               for doc in _step_docs(name, ran, landed, progress, landings, read if by_file else None)]
    return {
        "query": name,
        "checkpoint": str(cp.relative_to(root)),
        "table": None if by_file else str(sink.relative_to(root)),
        "rowsFrom": "foreachBatch input_file_name()" if by_file else "progress numInputRows",
        "landing": [str(d.relative_to(root)) for d in landings],
        "rows": {f[1]: f[2] for step in steps for f in step},
        "batches": batches,
    }


def _watermark_ms(p: Any) -> int | None:
    """The batch's watermark (epoch ms) from its progress event; None when it has none."""
    wm = (p.get("eventTime") or {}).get("watermark")
    if not wm:
        return None
    return int(datetime.strptime(wm, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp() * 1000)


def run_scenario(spark: Any, root: Path) -> dict[str, Any]:
    """Run both queries under ``root`` (created) on ``spark``; return the facts document."""
    from pyspark.sql import functions as F

    root.mkdir(parents=True, exist_ok=True)
    land = root / "landing"
    win = land / "events"
    win.mkdir(parents=True)
    events = (spark.readStream.schema(SCHEMA).json(str(win))
              .withWatermark("ts", "10 seconds").groupBy(F.window("ts", "10 seconds")).count()
              .select(F.col("window.start").alias("start"), F.col("window.end").alias("end"), "count"))
    steps = [[(0, f"events-{k}.json", 50 + k, BASE_S + 60 * k)] for k in range(WINDOW_FILES)]
    windowed = _run(spark, "windowed", events, root, [win], steps)

    left, right = land / "left", land / "right"
    left.mkdir()
    right.mkdir()
    both = spark.readStream.schema(SCHEMA).json(str(left)).union(spark.readStream.schema(SCHEMA).json(str(right)))
    usteps = [
        [(0, "left-0.json", 20, BASE_S)],
        [(1, "right-0.json", 21, BASE_S)],
        [(0, "left-1.json", 22, BASE_S)],
        [(0, "left-2.json", 23, BASE_S), (1, "right-1.json", 24, BASE_S)],
        [(1, "right-2.json", 25, BASE_S)],
    ]
    union = _run(spark, "union", both, root, [left, right], usteps, by_file=True)
    return {
        "spark": spark.version,
        "root": str(root),
        "queries": [windowed, union],
    }


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.split("\n\n")[0], file=sys.stderr)
        print("usage: source_batches_fixture.py OUT_FOLDER", file=sys.stderr)
        return 2
    from pyspark.sql import SparkSession

    out = Path(argv[1]).resolve()
    if out.exists():
        shutil.rmtree(out)
    spark = (SparkSession.builder.master("local[2]").appName("streamwatch-source-batches-fixture")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        facts = run_scenario(spark, out)
    finally:
        spark.stop()
    for crc in out.rglob("*.crc"):  # Hadoop checksums: noise in a committed fixture
        crc.unlink()
    (out / "facts.json").write_text(json.dumps(facts, indent=2) + "\n")
    print(f"wrote {out} (Spark {facts['spark']})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
