"""Writes ``flights_run.jsonl``: a deterministic, Spark-shaped recording of the flights
pipeline (streamwatch JSONL format v1) used by the dashboard's snapshot and Pilot tests.

bronze keeps up then goes idle, silver is slow (processing below input), gold has a state
operator and a watermark and finally fails in batch 20. Run: ``python make_recording.py``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

T0 = datetime(2026, 1, 1, 10, 0, 0, tzinfo=UTC)
IDS = {"flights_bronze": "0b0b0b0b-0000-4000-8000-000000000001",
       "flights_silver": "0b0b0b0b-0000-4000-8000-000000000002",
       "flights_gold": "0b0b0b0b-0000-4000-8000-000000000003"}


def iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def line(kind: str, t: datetime, event: dict) -> str:
    return json.dumps({"v": 1, "kind": kind, "t": int(t.timestamp() * 1000), "event": event})


def progress(name: str, batch: int, t: datetime, rows: int, in_rps: float, proc_rps: float) -> dict:
    qid = IDS[name]
    add = 300 + 40 * (batch % 5)
    d = {"addBatch": add, "getBatch": 5 + batch % 3, "latestOffset": 12 + batch % 4,
         "queryPlanning": 20 + (batch % 2) * 10, "walCommit": 25, "commitOffsets": 18, "triggerExecution": add + 90}
    p = {
        "id": qid, "runId": qid.replace("0b0b0b0b", "a0a0a0a0"), "name": name, "timestamp": iso(t),
        "batchId": batch, "batchDuration": sum(v for k, v in d.items() if k != "triggerExecution"),
        "numInputRows": rows, "inputRowsPerSecond": in_rps, "processedRowsPerSecond": proc_rps,
        "durationMs": d, "stateOperators": [],
        "sources": [{"description": f"FileStreamSource[file:/ws/landing/flights/{name}]",
                     "startOffset": {"logOffset": batch - 1} if batch else None,
                     "endOffset": {"logOffset": batch}, "latestOffset": None,
                     "numInputRows": rows, "inputRowsPerSecond": in_rps, "processedRowsPerSecond": proc_rps,
                     "metrics": {}}],
        "sink": {"description": f"FileSink[/ws/tables/flights/{name.split('_')[1]}]", "numOutputRows": rows},
    }
    if name == "flights_gold":
        wm = datetime(2013, 1, 1, 5, 0, tzinfo=UTC) + timedelta(hours=batch)
        p["eventTime"] = {"avg": iso(wm + timedelta(minutes=50)), "max": iso(wm + timedelta(minutes=95 + batch % 7 * 5)),
                          "min": iso(wm + timedelta(minutes=10)), "watermark": iso(wm)}
        p["stateOperators"] = [{
            "operatorName": "stateStoreSave", "numRowsTotal": 40 + batch * 3, "numRowsUpdated": 12 + batch % 4,
            "numRowsRemoved": 8, "numRowsDroppedByWatermark": batch % 3, "allUpdatesTimeMs": 30,
            "allRemovalsTimeMs": 4, "commitTimeMs": 55, "memoryUsedBytes": 90_000 + batch * 1_024,
            "numShufflePartitions": 2, "numStateStoreInstances": 2,
            "customMetrics": {"loadedMapCacheHitCount": batch * 2, "stateOnCurrentVersionSizeBytes": 20_000 + batch}}]
        p["sink"]["numOutputRows"] = 16 if batch % 2 else 0
    return p


def main() -> None:
    out = [json.dumps({"v": 1, "kind": "header", "time": int(T0.timestamp() * 1000), "source": "listener",
                       "app": {"sparkVersion": "4.2.0", "pipeline": "flights"}, "conf": {}})]
    for i, (name, qid) in enumerate(IDS.items()):
        t = T0 + timedelta(milliseconds=100 * i)
        out.append(line("started", t, {"id": qid, "runId": qid.replace("0b0b0b0b", "a0a0a0a0"), "name": name,
                                       "timestamp": iso(t)}))
    for b in range(21):
        t = T0 + timedelta(seconds=2 * b + 1)
        bronze_rows = 0 if b >= 18 else 900 + 37 * (b % 6)
        out.append(line("progress", t, progress("flights_bronze", b, t, bronze_rows,
                                                450.0 + 18 * (b % 6) if bronze_rows else 0.0,
                                                2100.0 + 40 * (b % 5) if bronze_rows else 0.0)))
        if b >= 18:
            out.append(line("idle", t, {"id": IDS["flights_bronze"], "runId": IDS["flights_bronze"].replace("0b0b0b0b", "a0a0a0a0"),
                                        "timestamp": iso(t)}))
        t2 = t + timedelta(milliseconds=300)
        out.append(line("progress", t2, progress("flights_silver", b, t2, 880 + 30 * (b % 4),
                                                 440.0 + 15 * (b % 4), 300.0 - 5 * (b % 3))))
        if b < 20:
            t3 = t + timedelta(milliseconds=600)
            out.append(line("progress", t3, progress("flights_gold", b, t3, 860 + 20 * (b % 3),
                                                     430.0 + 9 * (b % 3), 1500.0 + 25 * (b % 4))))
    tf = T0 + timedelta(seconds=41)
    gold = IDS["flights_gold"]
    out.append(line("terminated", tf, {
        "id": gold, "runId": gold.replace("0b0b0b0b", "a0a0a0a0"), "timestamp": iso(tf),
        "exception": "org.apache.spark.SparkException: [TASK_WRITE_FAILED] Task failed while writing rows "
                     "to file:/ws/tables/flights/gold.\n\tat org.apache.spark.sql.errors...",
        "errorClassOnException": "TASK_WRITE_FAILED"}))
    Path(__file__).with_name("flights_run.jsonl").write_text("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
