"""The Delta source backlog rules (:func:`streamwatch.model.deltalog.delta_backlog`) on commit
files as Delta writes them: a version read part-way (``maxFilesPerTrigger``), OPTIMIZE's
``dataChange: false`` rewrites (never read by a Delta source), a starting snapshot read
part-way, a metadata-change index. The end-to-end numbers against Spark are in
``tests/spark/test_delta_backlog.py``."""

from __future__ import annotations

import json

from streamwatch.checkpoint.delta import parse_delta_commit
from streamwatch.model.deltalog import delta_backlog


def _commit(version: int, adds: int, size: int = 100, data_change: bool = True, removes: int = 0,
            meta: bool = False):
    lines = [{"commitInfo": {"operation": "WRITE", "timestamp": 1}}]
    if meta:
        lines.append({"metaData": {"id": "t-1"}})
    lines += [{"add": {"path": f"v{version}-{i}.parquet", "size": size, "dataChange": data_change}} for i in range(adds)]
    lines += [{"remove": {"path": f"old-{i}.parquet", "dataChange": data_change}} for i in range(removes)]
    c = parse_delta_commit("\n".join(json.dumps(x) for x in lines).encode(), version)
    assert c is not None
    return c


LOG = [_commit(0, 5, meta=True), _commit(1, 4), _commit(2, 3, size=10), _commit(3, 2, data_change=False, removes=2)]


def test_caught_up_and_whole_versions():
    assert delta_backlog(LOG, 4).versions == 0 and delta_backlog(LOG, 4).next_version == 4
    b = delta_backlog(LOG, 1)  # version 1 not started: 1, 2 and the OPTIMIZE 3 still to pass
    assert (b.versions, b.files, b.bytes, b.latest_version, b.next_version) == (3, 7, 430, 3, 1)
    assert delta_backlog(LOG, 1, index=-20) == b  # a metadata-change index: no file of it read


def test_a_version_read_part_way_counts_its_remaining_data_files():
    b = delta_backlog(LOG, 1, index=1)  # files 0 and 1 of version 1 read
    assert (b.versions, b.files, b.bytes, b.next_version) == (3, 2 + 3, None, 1)
    done = delta_backlog(LOG, 1, index=3)  # its last file: Delta moves on to (2, -1), same backlog
    assert (done.versions, done.files, done.next_version) == (2, 3, 2)


def test_optimize_rewrites_are_no_files_to_read():
    assert LOG[3].adds == 2 and LOG[3].data_adds == 0 and LOG[3].data_add_bytes == 0
    b = delta_backlog(LOG, 3)
    assert (b.versions, b.files, b.bytes) == (1, 0, 0)


def test_a_starting_snapshot_read_part_way():
    b = delta_backlog(LOG, 0, index=1, starting=True)  # 2 of version 0's 5 live files read
    assert (b.versions, b.files, b.next_version) == (1 + 3, 3 + 7, 0)
    assert b.bytes is None
    assert delta_backlog(LOG, 1, index=-1, starting=True).files == 9 + 3  # 9 live at v1, then v2, v3
