"""Benchmark: is ``advise-watermark-delay``'s advice worth taking? A job made for the rule, run
as a user configures it badly (a watermark delay far longer than the data is late) and as
streamwatch advises, on one local[2] Spark in the same run, the arms alternated
(``bench.rounds``) for ``ADVISE_BENCH_ROUNDS`` rounds (default 5); per arm the median and the
min over rounds.

The job: a JSON file source (``maxFilesPerTrigger`` 1, ``availableNow``) →
``withWatermark("ts", delay)`` → ``groupBy(window(ts, 10 s), key).count()`` → ``noop`` in
append mode. The data: ``FILES`` files; file i holds ``ROWS`` rows, ``KEYS`` keys, with event
times in [T0 + 10 s·i, T0 + 10 s·(i+1)) (window i, every key) and a ``LATE_SHARE`` of them up
to ``LATE_MS`` before T0 + 10 s·i (window i−1): the lateness is bounded and known. Arms: delay
``BAD_DELAY`` and the delay streamwatch advises: its rule
(:func:`streamwatch.analysis.advice_watermark.watermark_delay`) runs first on the progress of a
``BAD_DELAY`` run and must say ``change`` (``target``: the advised delay).

Per run, Spark's own numbers (``recentProgress``): the state rows (``numRowsTotal``) and
``memoryUsedBytes`` of the last batch, the rows dropped by the watermark (Σ
``numRowsDroppedByWatermark``: the advice must not drop rows), the median batch time
(``durationMs.triggerExecution``), and each window's append-mode latency in files: the files
read (cumulative ``numInputRows`` ÷ ``ROWS``) when the batch that emitted it committed − the
files that carry its rows (i + 2: its own file and the next one's late rows). Windows are
emitted in event-time order, ``KEYS`` rows each (the sink's ``numOutputRows``). Not run in CI.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.rounds import Spread, alternate, print_ratio  # noqa: E402

ROUNDS = int(os.environ.get("ADVISE_BENCH_ROUNDS", "5"))
FILES = int(os.environ.get("ADVISE_BENCH_FILES", "30"))
ROWS, KEYS, LATE_SHARE, LATE_MS = 200, 20, 0.2, 4_000
WINDOW_MS = 10_000
T0 = 1_790_000_000_000  # a multiple of WINDOW_MS: file i is window i
BAD_DELAY = "2 minutes"


def write_files(folder: Path) -> None:
    """The ``FILES`` input files (see the module docstring), seeded: every arm reads the same rows."""
    from datetime import UTC, datetime

    rnd = random.Random(39)
    folder.mkdir(parents=True)
    for i in range(FILES):
        base = T0 + i * WINDOW_MS
        rows = []
        for r in range(ROWS):
            late = i > 0 and r >= ROWS * (1 - LATE_SHARE)
            ms = base - rnd.randint(1, LATE_MS) if late else base + rnd.randrange(WINDOW_MS)
            ts = datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
            rows.append(json.dumps({"ts": ts, "key": f"k{r % KEYS}"}))
        (folder / f"part-{i:05d}.json").write_text("\n".join(rows) + "\n")
        os.utime(folder / f"part-{i:05d}.json", (i + 1, i + 1))  # the file source reads oldest first


@dataclass
class Run:
    """One run's numbers, from Spark's progress (see the module docstring)."""

    state_rows: int
    state_bytes: int
    dropped: int
    batch_ms: float
    emit_files: list[int]
    progress: list[dict[str, Any]]


def run(spark: Any, src: Path, cp: Path, delay: str) -> Run:
    from pyspark.sql import functions as F

    df = (spark.readStream.schema("ts TIMESTAMP, key STRING").option("maxFilesPerTrigger", 1).json(str(src))
          .withWatermark("ts", delay).groupBy(F.window("ts", "10 seconds"), "key").count())
    q = (df.writeStream.format("noop").outputMode("append").option("checkpointLocation", str(cp))
         .trigger(availableNow=True).start())
    q.awaitTermination(600)
    assert q.exception() is None, q.exception()
    progress = list(q.recentProgress)
    read = sum(p["numInputRows"] for p in progress)
    assert read == FILES * ROWS, f"read {read} rows of {FILES * ROWS}: recentProgress too short?"
    data = [p for p in progress if p["numInputRows"] > 0]
    last = data[-1]["stateOperators"]
    files, emitted, emit = 0, 0, []
    for p in progress:
        files += p["numInputRows"] // ROWS
        out = p["sink"]["numOutputRows"]
        assert out % KEYS == 0, f"batch {p['batchId']} emitted {out} rows, not whole windows"
        for w in range(emitted, emitted + out // KEYS):
            emit.append(files - min(FILES, w + 2))
        emitted += out // KEYS
    return Run(sum(o["numRowsTotal"] for o in last), sum(o["memoryUsedBytes"] for o in last),
               sum(o["numRowsDroppedByWatermark"] for p in progress for o in p["stateOperators"]),
               statistics.median(p["durationMs"]["triggerExecution"] for p in data), emit, progress)


def advised_delay(spark: Any, base: Path, src: Path) -> str:
    """streamwatch's rule on the progress of a ``BAD_DELAY`` run → the advised delay."""
    from streamwatch.analysis.advice import Verdict
    from streamwatch.analysis.advice_watermark import delay_text, watermark_delay
    from streamwatch.model.events import QueryProgress

    derive = run(spark, src, base / "derive-cp", BAD_DELAY)
    a = watermark_delay([QueryProgress.from_dict(p) for p in derive.progress])
    assert a.verdict is Verdict.CHANGE and a.target is not None, a
    for e in a.evidence:
        print(f"  evidence: {e.text}")
    print(f"  streamwatch advises: {a.action}", flush=True)
    return delay_text(a.target)


def main() -> None:
    from streamwatch.spark.session import SessionConfig, create_session
    from streamwatch.spark.tableformat import TableFormatDecision

    with tempfile.TemporaryDirectory(prefix="advise-watermark-bench-") as tmp:
        base = Path(tmp)
        print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} "
              f"on {os.cpu_count()} cores; starting Spark (local[2]) …", flush=True)
        spark, _ = create_session(SessionConfig(workspace=base / "ws", master="local[2]", ui=False, shuffle_partitions=2,
                                                table_format=TableFormatDecision("parquet", "bench"),
                                                conf={"spark.sql.streaming.stateStore.maintenanceInterval": "24h"}))
        try:
            write_files(base / "in")
            advised = advised_delay(spark, base, base / "in")
            arms = (BAD_DELAY, advised)
            runs = alternate(arms, ROUNDS, lambda arm, r: run(spark, base / "in", base / f"cp-{arm}-{r}", arm))
        finally:
            spark.stop()
    print(f"\nwindowed count, append mode, {FILES} files × {ROWS} rows, {KEYS} keys, lateness ≤ {LATE_MS} ms; "
          f"{ROUNDS} alternated rounds; load average now {os.getloadavg()[0]:.2f}")
    for arm, rs in runs.items():
        rows, mem = Spread.of(x.state_rows for x in rs), Spread.of(x.state_bytes for x in rs)
        emit = Spread.of(statistics.median(x.emit_files) for x in rs)
        print(f"  delay {arm:10s} state rows median {rows.median:6,.0f} min {rows.min:6,.0f}"
              f"  state bytes median {mem.median:9,.0f} min {mem.min:9,.0f}"
              f"  window emitted after (files) median {emit.median:4.1f} min {emit.min:4.1f}"
              f"  windows emitted {statistics.median(len(x.emit_files) for x in rs):4.0f}"
              f"  dropped rows {max(x.dropped for x in rs)}"
              f"  batch ms median {statistics.median(x.batch_ms for x in rs):6,.0f}")
    bad, good = runs[BAD_DELAY], runs[advised]
    print_ratio(f"{BAD_DELAY} / {advised} state rows", [x.state_rows for x in bad], [x.state_rows for x in good])
    print_ratio(f"{BAD_DELAY} / {advised} state bytes", [x.state_bytes for x in bad], [x.state_bytes for x in good])
    print_ratio(f"{BAD_DELAY} / {advised} files until a window is emitted",
                [statistics.median(x.emit_files) for x in bad], [statistics.median(x.emit_files) for x in good])
    print_ratio(f"{BAD_DELAY} / {advised} batch time", [x.batch_ms for x in bad], [x.batch_ms for x in good], 2)


if __name__ == "__main__":
    main()
