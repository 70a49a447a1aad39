"""``advise-file-source-cleanup`` (streamwatch.analysis.advice_cleanup) on checkpoints written here
in Spark's on-disk format (``sources/0/N`` of ``FileStreamSourceLog``: ``v1`` then one JSON
line per file read) over folders made here: every count asserted is one this file wrote (the
files named by the log, the ones left in the folder), every time one of the progress events
given."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from streamwatch.analysis.advice import Confidence, Verdict
from streamwatch.analysis.advice_cleanup import MIN_FILES, PILE_FILES, file_source_cleanup, read_files_present
from streamwatch.checkpoint import read_checkpoint
from streamwatch.cli import main
from streamwatch.model.events import QueryProgress

T0 = 1_790_000_000_000
QID = "0a0d0v15-0000-4000-8000-000000000039"


def write_cp(root: Path, read: int, left: int, two_batches: bool = True) -> Path:
    """A checkpoint whose one file source read ``read`` files of ``root/in`` in its log batch 0
    and, with ``two_batches``, ``last.json`` in log batch 1 (still in the folder: Spark cleans
    a batch's files when it plans the next); the first ``left`` of batch 0's files are still
    there, plus ``new.json``, not read yet."""
    src = root / "in"
    src.mkdir(parents=True, exist_ok=True)
    cp = root / "cp"
    for d in ("offsets", "commits", "sources/0"):
        (cp / d).mkdir(parents=True)
    (cp / "metadata").write_text(json.dumps({"id": QID}))
    for b in range(2 if two_batches else 1):
        meta = {"batchWatermarkMs": 0, "batchTimestampMs": T0 + b, "conf": {}}
        (cp / "offsets" / str(b)).write_text("v1\n" + json.dumps(meta) + "\n" + json.dumps({"logOffset": b}))
        (cp / "commits" / str(b)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    lines = [json.dumps({"path": f"file://{src}/f{i:05d}.json", "timestamp": T0 - 1000, "batchId": 0})
             for i in range(read)]
    (cp / "sources" / "0" / "0").write_text("v1\n" + "\n".join(lines))
    for i in range(left):
        (src / f"f{i:05d}.json").write_text("{}\n")
    if two_batches:
        last = {"path": f"file://{src}/last.json", "timestamp": T0, "batchId": 1}
        (cp / "sources" / "0" / "1").write_text("v1\n" + json.dumps(last))
        (src / "last.json").write_text("{}\n")
    (src / "new.json").write_text("{}\n")  # unread: never counted as read
    return cp


def progress(latest_offset_ms: int, batch_ms: int, n: int = 3) -> list[QueryProgress]:
    return [QueryProgress.from_dict({"id": QID, "runId": "r", "batchId": b, "numInputRows": 1,
                                     "durationMs": {"latestOffset": latest_offset_ms, "triggerExecution": batch_ms}})
            for b in range(n)]


def judge(root: Path, read: int, left: int, prog: list[QueryProgress] | None = None):
    cp = write_cp(root, read, left)
    c = read_checkpoint(cp)
    (a,) = file_source_cleanup(c, read_files_present(str(cp), c), prog or ())
    return a


def ev(a) -> dict[str, int | float]:
    return {e.what: e.value for e in a.evidence}


def test_a_pile_of_read_files_left_in_the_folder_advises_clean_source(tmp_path):
    a = judge(tmp_path, PILE_FILES + 10, PILE_FILES)
    assert (a.verdict, a.confidence) == (Verdict.CHANGE, Confidence.LIKELY)
    assert ev(a)["files read"] == PILE_FILES + 11
    assert ev(a)["read files still in the folder"] == PILE_FILES + 1  # the unread new.json is not counted
    assert ev(a)["of them read before the latest log batch"] == PILE_FILES
    assert a.action is not None and '.option("cleanSource", "archive")' in a.action and "sourceArchiveDir" in a.action
    assert f"move the {PILE_FILES:,} read before out of" in a.action


def test_only_the_latest_batchs_files_left_is_kept_measured(tmp_path):
    a = judge(tmp_path, 40, 0)
    assert (a.verdict, a.confidence, a.action) == (Verdict.KEEP, Confidence.MEASURED, None)
    assert ev(a) == {"files read": 41, "read files still in the folder": 1,
                     "of them read before the latest log batch": 0}


def test_files_left_by_the_only_log_batch_are_unknown(tmp_path):
    cp = write_cp(tmp_path, 30, 30, two_batches=False)
    c = read_checkpoint(cp)
    (a,) = file_source_cleanup(c, read_files_present(str(cp), c))
    assert (a.verdict, a.confidence) == (Verdict.UNKNOWN, Confidence.UNKNOWN)
    assert ev(a)["read files still in the folder"] == 30
    assert a.needs is not None and "second micro-batch" in a.needs


def test_a_few_read_files_left_with_cheap_planning_are_kept_likely(tmp_path):
    a = judge(tmp_path, MIN_FILES, MIN_FILES, progress(latest_offset_ms=20, batch_ms=1_000))
    assert (a.verdict, a.confidence) == (Verdict.KEEP, Confidence.LIKELY)
    assert ev(a)["planning share of the batch time"] == 2


def test_read_files_left_while_planning_takes_a_quarter_of_the_batch_advise_clean_source(tmp_path):
    a = judge(tmp_path, MIN_FILES, MIN_FILES, progress(latest_offset_ms=300, batch_ms=1_000))
    assert (a.verdict, a.confidence) == (Verdict.CHANGE, Confidence.LIKELY)
    assert ev(a)["median planning time (all sources' latest offsets)"] == 300
    assert ev(a)["median batch time"] == 1_000 and ev(a)["planning share of the batch time"] == 30


def test_slow_planning_with_few_read_files_left_is_kept(tmp_path):
    a = judge(tmp_path, MIN_FILES - 1, MIN_FILES - 1, progress(latest_offset_ms=900, batch_ms=1_000))
    assert a.verdict is Verdict.KEEP


def test_a_folder_that_cannot_be_listed_is_unknown_with_needs(tmp_path):
    cp = write_cp(tmp_path, 10, 10)
    for f in (tmp_path / "in").iterdir():
        f.unlink()
    (tmp_path / "in").rmdir()
    c = read_checkpoint(cp)
    present = read_files_present(str(cp), c)
    assert present["0"].present is None and present["0"].read == 11
    (a,) = file_source_cleanup(c, present)
    assert (a.verdict, a.confidence) == (Verdict.UNKNOWN, Confidence.UNKNOWN)
    assert a.needs is not None and "listed" in a.needs and "cannot be listed" in a.summary


def test_a_checkpoint_without_a_file_source_is_unknown(tmp_path):
    cp = write_cp(tmp_path, 1, 1, two_batches=False)
    for f in (cp / "sources" / "0").iterdir():
        f.unlink()
    (cp / "sources" / "0").rmdir()
    (cp / "sources").rmdir()
    c = read_checkpoint(cp)
    (a,) = file_source_cleanup(c, read_files_present(str(cp), c))
    assert a.verdict is Verdict.UNKNOWN and a.needs is not None and "file source" in a.needs


def test_advise_cli_reports_the_rule(tmp_path):
    cp = write_cp(tmp_path, PILE_FILES, PILE_FILES)
    r = CliRunner().invoke(main, ["advise", str(cp), "--cores", "2", "--json"])
    assert r.exit_code == 1, r.output  # a rule advises a change
    a = next(f for f in json.loads(r.stdout)["findings"] if f["code"] == "advise-file-source-cleanup")
    assert (a["verdict"], a["confidence"]) == ("change", "likely")
    assert {e["what"]: e["value"] for e in a["evidence"]}["of them read before the latest log batch"] == PILE_FILES


def test_a_file_name_spark_wrote_uri_encoded_is_matched_to_the_listing(tmp_path):
    cp = write_cp(tmp_path, 0, 0)
    src = tmp_path / "in"
    (src / "a b.json").write_text("{}\n")
    entry = {"path": f"file://{src}/a%20b.json", "timestamp": T0, "batchId": 0}
    (cp / "sources" / "0" / "0").write_text("v1\n" + json.dumps(entry))
    c = read_checkpoint(cp)
    rp = read_files_present(str(cp), c)["0"]
    assert (rp.read, rp.present, rp.present_before_latest) == (2, 2, 1)  # a b.json and last.json
