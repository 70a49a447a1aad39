"""Source offsets of the version matrix (``tests/fixtures/matrix/<version>/``, from
``scripts/version_matrix.py`` and ``scripts/matrix_sources.py``): for every batch Spark ran, the
offset streamwatch reads from ``offsets/N`` for each source is the ``endOffset`` Spark reported
in that batch's progress, classified as the source it is; what each batch read (Kafka offsets
advanced per partition, a rate-micro-batch offset's advance) adds up to Spark's own
``numInputRows``. Cases written before the facts held ``sources`` are not parametrized."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from streamwatch.analysis.batchio import SourceReader
from streamwatch.analysis.probe import Probe
from streamwatch.checkpoint.reader import read_checkpoint

MATRIX = Path(__file__).resolve().parent.parent / "fixtures" / "matrix"

#: Spark's source description (its ``toString``) → the kind streamwatch must classify it as.
KINDS = (("KafkaV2", "kafka"), ("KafkaSource", "kafka"), ("RatePerMicroBatch", "rate"),
         ("RateStream", "number"), ("FileStreamSource", "file"))


def _cases() -> list[tuple[str, str, dict[str, Any]]]:
    out = []
    for f in sorted(MATRIX.glob("*/facts.json")):
        facts = json.loads(f.read_text())
        for name, case in sorted(facts["cases"].items()):
            if "error" not in case and any(p.get("sources") for p in case.get("progress", ())):
                out.append((facts["spark"], name, case))
    return out


CASES = _cases()
IDS = [f"{v}-{n}" for v, n, _ in CASES]


def _kind(description: str) -> str:
    return next(k for prefix, k in KINDS if description.startswith(prefix))


def _json(offset: Any) -> Any:
    return json.loads(offset) if isinstance(offset, str) else offset


def test_the_matrix_has_rate_and_kafka_sources_on_every_line():
    by_line: dict[str, set[str]] = {}
    for version, _, case in CASES:
        for p in case["progress"]:
            by_line.setdefault(version, set()).update(_kind(s["description"]) for s in p["sources"])
    assert by_line, "no case holds source facts: run `MATRIX_CASES=rate_mb,rate,kafka make matrix`"
    for version, kinds in by_line.items():
        assert {"rate", "number"} <= kinds, (version, kinds)
    kafka_lines = [v for v, kinds in by_line.items() if "kafka" in kinds]
    assert kafka_lines, "no Spark line wrote a Kafka case"


@pytest.mark.parametrize(("version", "name", "case"), CASES, ids=IDS)
def test_each_batch_source_offset_is_spark_end_offset(version, name, case):
    cp = read_checkpoint(str(MATRIX / version / case["checkpoint"]))
    entries = {e.batch_id: e for e in cp.offsets}
    checked = 0
    for p in case["progress"]:
        entry = entries[p["batchId"]]
        assert entry.version == 1, "named sources (offsets log v2) are matched by name elsewhere"
        for i, s in enumerate(p["sources"]):
            got = entry.parsed[i]
            assert got is not None and got.kind == _kind(s["description"]), (p["batchId"], s["description"], got)
            want = _json(s["endOffset"])
            assert (got.fields["value"] if got.kind == "number" else dict(got.fields)) == want, p["batchId"]
            checked += 1
    assert checked >= 3


@pytest.mark.parametrize(("version", "name", "case"), [c for c in CASES if c[1] in ("kafka", "rate_mb")],
                         ids=[i for i, c in zip(IDS, CASES, strict=True) if c[1] in ("kafka", "rate_mb")])
def test_what_each_batch_read_adds_up_to_spark_num_input_rows(version, name, case):
    path = str(MATRIX / version / case["checkpoint"])
    cp = read_checkpoint(path)
    entries = {e.batch_id: e for e in cp.offsets}
    reader = SourceReader(Probe(path), path, file_sizes=False)
    compared = 0
    for p in case["progress"]:
        b = p["batchId"]
        if b - 1 not in entries:  # the first batch reads from the start offset, not in the log
            continue
        (got,) = reader.inputs(entries[b], entries[b - 1])
        read = sum(sum(parts.values()) for parts in (got.offsets or {}).values()) if got.kind == "kafka" else got.advanced
        assert read == p["numInputRows"], (b, got)
        compared += 1
    assert compared >= 2
