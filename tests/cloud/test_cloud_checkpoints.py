"""``streamwatch inspect/state/retention/diff/watch`` and ``inspect --recursive`` on
``abfss://…`` (Azurite) and ``gs://…`` (gcp-storage-emulator) give the answers they give on
the local copy of the same checkpoints — run as a user runs them, a fresh ``streamwatch``
process each, pointed at the server by the environment variables adlfs and gcsfs honour
(``AZURE_STORAGE_CONNECTION_STRING``, ``STORAGE_EMULATOR_HOST``).

Each run is a new process that imports adlfs or gcsfs (~3 s on a loaded 2-core machine), so
the runs of one store are started together (:data:`PARALLEL` at a time) by a module fixture and
the tests below compare what they printed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cloud import Store, build_workspace, run_cli

PARALLEL = 4
QUERIES = {"agg": "ws/checkpoints/agg/rocks", "join": "ws/checkpoints/join/plain"}


def _commands(root: str) -> dict[str, list[str]]:
    """What each store (and the local copy) is asked, by name; ``root`` is where
    :func:`build_workspace`'s tree is."""
    out: dict[str, list[str]] = {}
    for q, rel in QUERIES.items():
        out[f"inspect-{q}"] = ["inspect", f"{root}/{rel}", "--json"]
        out[f"state-{q}"] = ["state", f"{root}/{rel}", "--json"]
        out[f"retention-{q}"] = ["retention", f"{root}/{rel}", "--json"]
    out["diff"] = ["diff", f"{root}/old/agg", f"{root}/{QUERIES['agg']}", "--json"]
    out["recursive"] = ["inspect", "--recursive", f"{root}/ws", "--json"]
    out["watch"] = ["watch", f"{root}/ws", "--log", "--once"]
    out["missing"] = ["inspect", f"{root}/ws/nothing-here", "--json"]
    return out


def _run_all(commands: dict[str, list[str]], env: dict[str, str]) -> dict[str, Any]:
    with ThreadPoolExecutor(PARALLEL) as pool:
        done = dict(zip(commands, pool.map(lambda a: run_cli(a, env), commands.values()), strict=True))
    return done


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    """The local copy: (tree root, results by command name, normalizer)."""
    dest = tmp_path_factory.mktemp("local")
    build_workspace(dest, f"file://{dest}")  # as Spark names local files: file:///abs/path
    results = _run_all(_commands(str(dest)), {})
    return dest, results, _normalizer(f"file://{dest}", str(dest))


def _normalizer(*roots: str) -> Callable[[str], str]:
    def norm(text: str) -> str:
        for r in roots:
            text = text.replace(r, "ROOT")
        return text

    return norm


@pytest.fixture(scope="module", params=["azure", "gcs"])
def store(request, tmp_path_factory):
    """One store with the tree uploaded (its source logs naming files on that store) and every
    command of :func:`_commands` run against it: (Store, results, normalizer, upload window
    in epoch ms)."""
    if request.param == "azure":
        server = request.getfixturevalue("azurite_server")
        bucket, prefix = "cps", "t"
        from tests.helpers.azurite import ACCOUNT

        s = Store("azure", f"abfss://{bucket}@{ACCOUNT}.dfs.core.windows.net/{prefix}", f"{bucket}/{prefix}",
                  server.env(), server, bucket, prefix)
        server.create_container(bucket)
    else:
        server = request.getfixturevalue("gcs_server")
        bucket, prefix = "cps", "t"
        s = Store("gcs", f"gs://{bucket}/{prefix}", f"{bucket}/{prefix}", server.env(), server, bucket, prefix)
        server.create_bucket(bucket)
    tree = build_workspace(tmp_path_factory.mktemp(s.name), s.base)
    t0 = int(time.time() * 1000) - 2000  # object times are whole seconds on some stores
    server.upload(tree, bucket, prefix)
    t1 = int(time.time() * 1000) + 2000
    s.uploaded = server.digest(bucket)
    commands = _commands(s.base)
    if s.name == "azure":  # az://CONTAINER/PATH names the same blobs, the account from the connection string
        commands["az-inspect-agg"] = ["inspect", f"az://{bucket}/{prefix}/{QUERIES['agg']}", "--json"]
    results = _run_all(commands, s.env)
    return s, results, _normalizer(s.base, s.inner), (t0, t1), tree


def _ok(r, code: int = 0) -> str:
    assert r.returncode == code, (r.args, r.returncode, r.stderr[-3000:])
    return r.stdout


def _state_bytes(cp: Path) -> dict[int, int]:
    """Bytes of every file under each operator's state folder (what a listing reports)."""
    return {int(op.name): sum(f.stat().st_size for f in op.rglob("*") if f.is_file())
            for op in (cp / "state").iterdir() if op.name.isdigit()}


@pytest.mark.parametrize("query", ["agg", "join"])
def test_inspect_json_matches_local(store, local, query):
    s, results, norm, _, tree = store
    dest, here, lnorm = local
    remote = json.loads(norm(_ok(results[f"inspect-{query}"])))
    mine = json.loads(lnorm(_ok(here[f"inspect-{query}"])))
    # object-store listings carry sizes, so state bytes come for free there (locally: --sizes)
    sizes = _state_bytes(tree / QUERIES[query])
    assert [op["bytes"] for op in remote["state"]] == [sizes[op["operator_id"]] for op in remote["state"]]
    assert all(op["bytes"] is None for op in mine["state"])
    for op in remote["state"]:
        op["bytes"] = None
    # a source log names its files by URL: longer on a store (abfss://cps@devstoreaccount1…)
    for doc, root in ((remote, tree), (mine, dest)):
        for src in doc["sources"]:
            log = root / QUERIES[query] / "sources" / src["id"]
            assert src["file_log"]["bytes"] == sum(f.stat().st_size for f in log.iterdir())
            src["file_log"]["bytes"] = None
    assert remote == mine
    assert remote["path"] == f"ROOT/{QUERIES[query]}" and remote["batches"]["last_committed"] is not None


@pytest.mark.parametrize("query", ["agg", "join"])
def test_state_json_matches_local(store, local, query):
    s, results, norm, _, _ = store
    remote = json.loads(norm(_ok(results[f"state-{query}"])))
    mine = json.loads(local[2](_ok(local[1][f"state-{query}"])))
    assert remote == mine
    assert sum(t["total_rows"] for t in remote["tables"]) > 0  # rows decoded from the store's files


def _log_sizes(doc: dict[str, Any], tree: Path, query: str) -> None:
    """Check each source log's ``bytes`` against the files in ``tree`` and drop every byte
    figure of the file logs: their entries name files by URL, longer on a store than locally."""
    for lg in doc["file_logs"]:
        folder = tree / QUERIES[query] / "sources" / lg["name"]
        assert lg["bytes"] == sum(f.stat().st_size for f in folder.iterdir()), lg
        for k in [k for k in lg if "bytes" in k]:
            lg[k] = None


@pytest.mark.parametrize("query", ["agg", "join"])
def test_retention_matches_local(store, local, query):
    s, results, norm, _, tree = store
    remote = json.loads(norm(_ok(results[f"retention-{query}"])))
    mine = json.loads(local[2](_ok(local[1][f"retention-{query}"])))
    _log_sizes(remote, tree, query)
    _log_sizes(mine, local[0], query)
    assert remote == mine
    assert remote["state"] and all(op["bytes"] for op in remote["state"])


def _subjects(doc: dict[str, Any]) -> list[str | None]:
    """Pop the ``subject`` of every finding in a diff document (held against the local copy's below)."""
    out = []
    for group in doc["findings"].values():
        for f in group:
            for part in (f, f.get("old") or {}, f.get("new") or {}):
                if "subject" in part:
                    out.append(part.pop("subject"))
    return out


def test_diff_matches_local(store, local):
    s, results, norm, _, _ = store
    remote = json.loads(norm(_ok(results["diff"], 1)))  # 1: changes found
    mine = json.loads(local[2](_ok(local[1]["diff"], 1)))
    _subjects(remote), _subjects(mine)
    assert remote == mine
    assert remote["batches"] != {} and remote["sources"] and remote["findings"]["cleared"]


def test_diff_finding_subjects_match_local(store, local):
    s, results, norm, _, _ = store
    remote = _subjects(json.loads(norm(_ok(results["diff"], 1))))
    mine = _subjects(json.loads(local[2](_ok(local[1]["diff"], 1))))
    assert remote == mine == ["state/0"]


def _without_times(doc: Any) -> Any:
    """``doc`` without when files were written (upload time on a store, copy time locally)."""
    if isinstance(doc, dict):
        return {k: _without_times(v) for k, v in doc.items() if k not in ("last_commit_ms", "last_commit")}
    if isinstance(doc, list):
        return [_without_times(v) for v in doc]
    return doc


def test_recursive_matches_local(store, local):
    s, results, norm, (t0, t1), _ = store
    remote = json.loads(norm(_ok(results["recursive"])))
    mine = json.loads(local[2](_ok(local[1]["recursive"])))
    assert _without_times(remote) == _without_times(mine)
    rows = remote["checkpoints"] if isinstance(remote, dict) else remote
    assert sorted(r["path"] for r in rows) == sorted(f"ROOT/{q}" for q in QUERIES.values())
    assert all(t0 <= r["last_commit_ms"] <= t1 for r in rows)  # the object's own write time


def _watch_records(text: str) -> list[dict[str, Any]]:
    keep = {"checkpoint-batch": ("id", "query", "checkpoint", "batchId", "plannedAtMs", "watermarkMs", "inputFiles",
                                 "inputBytes", "inputs", "output", "state", "originMs"),
            "checkpoint-status": ("id", "query", "lastBatchId", "lastCommittedBatchId", "inFlightBatchId")}
    out = []
    for line in text.splitlines():
        rec = json.loads(line)
        fields = keep.get(rec["kind"])
        out.append({"kind": rec["kind"], **({k: rec.get(k) for k in fields} if fields else {})})
    return out


def test_watch_matches_local(store, local):
    s, results, norm, _, _ = store
    remote = _watch_records(norm(_ok(results["watch"])))
    mine = _watch_records(local[2](_ok(local[1]["watch"])))
    assert remote == mine
    batches = [r for r in remote if r["kind"] == "checkpoint-batch"]
    assert {r["checkpoint"] for r in batches} == {f"ROOT/{q}" for q in QUERIES.values()}
    # the input files Spark logged as gs://… / abfss://…@account… are looked up on the store
    assert batches and all(r["inputBytes"] for r in batches if r["inputFiles"])


def test_missing_checkpoint_is_exit_4(store, local):
    s, results, _, _, _ = store
    r = results["missing"]
    assert r.returncode == local[1]["missing"].returncode == 4, r.stderr
    assert "no such file or directory" in r.stderr and len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("store", ["azure"], indirect=True)
def test_az_url_reads_the_same_blobs(store):
    s, results, norm, _, _ = store
    via_az = json.loads(_ok(results["az-inspect-agg"]).replace(f"az://{s.inner}", "ROOT").replace(s.inner, "ROOT"))
    via_abfss = json.loads(norm(_ok(results["inspect-agg"])))
    assert via_az == via_abfss


def test_nothing_was_written(store):
    """Every command above read the store; none created, changed or deleted an object."""
    s, _, _, _, _ = store
    assert s.server.digest(s.bucket) == s.uploaded  # type: ignore[attr-defined]
