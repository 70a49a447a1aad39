"""What ``streamwatch inspect`` writes when there is more to name than fits in one finding: the
"(+N more ranges)" tail of batch and version ranges (commits without offsets, orphan and
uncommitted state versions), the "(+N more)" tail of partitions lacking a state version, and
join state stores (several store folders per partition, ``left-keyToNumValues`` …) named as
``partition/store``.

Every checkpoint is written by the test in Spark's on-disk formats (``offsets/N``: ``v1`` +
OffsetSeqMetadata JSON + one source offset; ``commits/N``: ``v1`` + CommitMetadata;
``sources/0/N``: ``v1`` + one FileEntry; state ``state/<op>/<partition>[/<store>]/<v>.delta``,
the folder layout of ``HDFSBackedStateStoreProvider`` and of a stream-stream join's four
stores), no shared corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from streamwatch.cli import main

QID = "3f1c1d0e-0000-4000-8000-0000000000a1"
T0 = 1_700_000_000_000
JOIN_STORES = ("left-keyToNumValues", "left-keyWithIndexToValue", "right-keyToNumValues", "right-keyWithIndexToValue")


def _checkpoint(root: Path, offsets, commits) -> Path:
    """A file-source query's checkpoint at ``root/cp`` with these offsets/commits batch ids
    (each planned batch's files in ``sources/0/``)."""
    cp = root / "cp"
    for d in ("offsets", "commits", "sources/0"):
        (cp / d).mkdir(parents=True)
    (cp / "metadata").write_text(json.dumps({"id": QID}))
    for b in offsets:
        meta = {"batchWatermarkMs": 0, "batchTimestampMs": T0 + b * 1000, "conf": {"spark.sql.shuffle.partitions": "2"}}
        (cp / "offsets" / str(b)).write_text(f"v1\n{json.dumps(meta)}\n{json.dumps({'logOffset': b})}")
        entry = {"path": f"file:///in/f{b}.json", "timestamp": T0 + b, "batchId": b}
        (cp / "sources" / "0" / str(b)).write_text("v1\n" + json.dumps(entry))
    for b in commits:
        (cp / "commits" / str(b)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    return cp


def _versions(cp: Path, where: str, versions) -> None:
    """Empty ``<v>.delta`` files in ``state/0/<where>`` (``"1"`` or ``"1/left-keyToNumValues"``)."""
    d = cp / "state" / "0" / where
    d.mkdir(parents=True, exist_ok=True)
    for v in versions:
        (d / f"{v}.delta").write_bytes(b"")


def _findings(cp: Path) -> dict[str, list[dict]]:
    r = CliRunner().invoke(main, ["inspect", str(cp), "--json"])
    assert r.exit_code == 0, r.output
    out: dict[str, list[dict]] = {}
    for f in json.loads(r.stdout)["findings"]:
        out.setdefault(f["code"], []).append(f)
    return out


def _one(findings: dict[str, list[dict]], code: str) -> dict:
    assert len(findings.get(code, [])) == 1, findings
    return findings[code][0]


# -- "(+N more ranges)": commit-without-offsets, orphan and uncommitted state versions -------

@pytest.mark.parametrize(("holes", "named"), [
    ((1, 3, 5, 7, 9), "batches 1, 3, 5, 7, 9"),  # five ranges: all named, no tail
    ((1, 3, 5, 7, 9, 11), "batches 1, 3, 5, 7, 9 (+1 more ranges)"),
    ((1, 2, 4, 6, 8, 10, 12, 13, 14, 16), "batches 1–2, 4, 6, 8, 10 (+2 more ranges)"),
])
def test_commits_without_offsets_name_five_ranges_then_how_many_more(tmp_path, unchanged, holes, named):
    cp = _checkpoint(tmp_path, offsets=range(20), commits=range(20))
    for b in holes:  # offsets/N deleted, commits/N kept: "commits without offsets"
        (cp / "offsets" / str(b)).unlink()
    unchanged(cp)
    f = _one(_findings(cp), "commit-without-offsets")
    assert f["message"] == f"commits without offsets: {named}"
    assert f["severity"] == "error" and f["path"] == str(cp / "commits")


@pytest.mark.parametrize(("orphans", "named"), [
    ((5, 7, 9, 11, 13), "5, 7, 9, 11, 13 are beyond"),
    ((5, 7, 9, 11, 13, 15), "5, 7, 9, 11, 13 (+1 more ranges) are beyond"),
    ((5, 6, 8, 10, 12, 14, 16, 17, 19), "5–6, 8, 10, 12, 14 (+2 more ranges) are beyond"),
])
def test_orphan_state_versions_name_five_ranges_then_how_many_more(tmp_path, unchanged, orphans, named):
    cp = _checkpoint(tmp_path, offsets=(0, 1, 2), commits=(0, 1, 2))
    _versions(cp, "0", (1, 2, 3, *orphans))
    _versions(cp, "1", (1, 2, 3))
    unchanged(cp)
    f = _one(_findings(cp), "state-orphan-versions")
    assert f["message"] == (f"state operator 0: state versions {named} the latest planned batch 2 "
                            "(left from another run?)")
    assert f["severity"] == "warning" and f["path"] == str(cp / "state" / "0")


def test_uncommitted_state_versions_name_five_ranges_then_how_many_more(tmp_path, unchanged):
    # batch 2 committed, batches up to 20 planned: versions 4..21 are an uncommitted batch's
    cp = _checkpoint(tmp_path, offsets=range(21), commits=(0, 1, 2))
    _versions(cp, "0", (1, 2, 3, 4, 5, 7, 9, 11, 13, 15, 21))
    _versions(cp, "1", (1, 2, 3))
    unchanged(cp)
    f = _one(_findings(cp), "state-uncommitted-version")
    assert f["message"] == ("state operator 0: state version 4–5, 7, 9, 11, 13 (+2 more ranges) was written "
                            "by an uncommitted batch and will be rewritten on restart")
    assert f["severity"] == "info" and f["path"] == str(cp / "state" / "0")


# -- "(+N more)": partitions lacking the committed state version ----------------------------

@pytest.mark.parametrize(("lacking", "named"), [
    (5, "partition 0, 1, 2, 3, 4"),
    (6, "partition 0, 1, 2, 3, 4 (+1 more)"),
    (8, "partition 0, 1, 2, 3, 4 (+3 more)"),
])
def test_state_version_missing_names_five_partitions_then_how_many_more(tmp_path, unchanged, lacking, named):
    cp = _checkpoint(tmp_path, offsets=(0, 1, 2), commits=(0, 1, 2))
    for p in range(lacking):
        _versions(cp, str(p), (1, 2))  # version 3 (after committed batch 2) missing
    _versions(cp, str(lacking), (1, 2, 3))  # one partition that has it, named nowhere
    unchanged(cp)
    f = _one(_findings(cp), "state-version-missing")
    assert f["message"] == f"state operator 0: state version 3 (after committed batch 2) is missing in {named}"
    assert f["severity"] == "error" and f["path"] == str(cp / "state" / "0")


# -- join state stores: several store folders per partition --------------------------------

def _join(cp: Path, partitions: int, versions=(1, 2, 3)) -> None:
    for p in range(partitions):
        for store in JOIN_STORES:
            _versions(cp, f"{p}/{store}", versions)


def test_a_healthy_join_state_has_no_state_finding(tmp_path, unchanged):
    cp = _checkpoint(tmp_path, offsets=(0, 1, 2), commits=(0, 1, 2))
    _join(cp, 2)
    unchanged(cp)
    r = CliRunner().invoke(main, ["inspect", str(cp), "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    codes = {f["code"] for f in data["findings"]}
    # the growth audit decodes the state files, which this test leaves empty
    assert codes <= {"state-audit-unreadable"}, data["findings"]
    (op,) = data["state"]
    assert sorted(op["stores"]) == sorted(JOIN_STORES)
    assert op["partitions"] == 2 and op["versions"] == {"min": 1, "max": 3, "in_every_partition": 3}


def test_join_stores_lacking_a_version_are_named_partition_slash_store(tmp_path, unchanged):
    cp = _checkpoint(tmp_path, offsets=(0, 1, 2), commits=(0, 1, 2))
    _join(cp, 2)
    (cp / "state/0/0/right-keyToNumValues/3.delta").unlink()
    (cp / "state/0/1/left-keyWithIndexToValue/3.delta").unlink()
    unchanged(cp)
    f = _one(_findings(cp), "state-version-missing")
    assert f["message"] == ("state operator 0 (symmetricHashJoin): state version 3 (after committed batch 2) is missing in partition "
                            "0/right-keyToNumValues, 1/left-keyWithIndexToValue")
    assert f["path"] == str(cp / "state" / "0")


def test_join_stores_beyond_five_are_counted(tmp_path, unchanged):
    cp = _checkpoint(tmp_path, offsets=(0, 1, 2), commits=(0, 1, 2))
    _join(cp, 2, versions=(1, 2))  # all eight stores lack version 3
    unchanged(cp)
    f = _one(_findings(cp), "state-version-missing")
    assert f["message"] == ("state operator 0 (symmetricHashJoin): state version 3 (after committed batch 2) is missing in partition "
                            "0/left-keyToNumValues, 0/left-keyWithIndexToValue, 0/right-keyToNumValues, "
                            "0/right-keyWithIndexToValue, 1/left-keyToNumValues (+3 more)")


def test_join_store_versions_count_for_orphans_and_uncommitted(tmp_path, unchanged):
    """An orphan or uncommitted version in one store of one partition is named once."""
    cp = _checkpoint(tmp_path, offsets=(0, 1, 2, 3), commits=(0, 1, 2))
    _join(cp, 2)
    _versions(cp, "1/right-keyWithIndexToValue", (4, 6, 9))
    _versions(cp, "0/left-keyToNumValues", (4,))
    unchanged(cp)
    findings = _findings(cp)
    assert _one(findings, "state-uncommitted-version")["message"].startswith(
        "state operator 0 (symmetricHashJoin): state version 4 was written by an uncommitted batch")
    assert _one(findings, "state-orphan-versions")["message"].startswith(
        "state operator 0 (symmetricHashJoin): state versions 6, 9 are beyond the latest planned batch 3")
    assert "state-version-missing" not in findings
