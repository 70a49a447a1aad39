"""Which Spark can restart which checkpoint — observed, not guessed from release notes: every
checkpoint of the version matrix (``tests/fixtures/matrix/<written by>/<case>/``) restarted
under every pyspark of the matrix, with one more input file landed so the restart runs a batch
and loads the state. Writes ``tests/fixtures/matrix/restarts.json`` (the tests hold
``inspect``'s answer against it) and ``bench/COMPAT-MATRIX.md``.

Two modes:

* ``build`` (``make restart-matrix``, after ``make matrix``): for each pyspark venv under
  ``.matrix/`` runs ``restart`` and then writes the table. Not part of CI: the output is
  committed.
* ``restart OUT.json``: run by a venv's own python; restarts every fixture on a copy (the
  fixtures are never written to) and writes ``{written_by: {case: outcome}}``.

An outcome is ``{"ok": true, "batches": N}`` (the restarted query ran N batches without an
error) or ``{"ok": false, "error": "<exception class>: <first line>"}``. The query restarted is
the case's own (scripts/version_matrix.py); where the restarting pyspark lacks an API the query
uses (``DataStreamReader.name`` before 4.2, ``transformWithStateInPandas`` before 4.0) the
outcome is that error: that Spark cannot run the query at all.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scripts.version_matrix import OUT, RECORDER, VENVS, VERSIONS, _err, case_list  # noqa: E402

RESULTS = OUT / "restarts.json"
TABLE = ROOT / "bench" / "COMPAT-MATRIX.md"


def _more_input(root: Path) -> None:
    """Land one more file in every input folder of a case: the last file again, later."""
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and p.name != "cp"):
        files = sorted(folder.glob("part-*.json"))
        if not files:
            continue
        extra = folder / "part-00099.json"
        shutil.copyfile(files[-1], extra)
        os.utime(extra, (1_800_000_000, 1_800_000_000))


def _move_source_logs(cp: Path, old: Path, new: Path) -> None:
    """Point the copy's file-source logs at the copy's input files: Spark lists the files of the
    last batch again on restart and refuses paths outside the source folder."""
    for log in (cp / "sources").glob("*/*"):
        if log.is_file():
            log.write_bytes(log.read_bytes().replace(old.as_uri().encode(), new.as_uri().encode())
                            .replace(str(old).encode(), str(new).encode()))


def restart(out: Path) -> None:
    import pyspark
    from pyspark.sql import SparkSession

    from scripts.version_matrix import _v
    from tests.helpers import state_queries as Q

    spark = (SparkSession.builder.master("local[2]").appName("streamwatch-restart-matrix")
             .config("spark.sql.shuffle.partitions", "2").config("spark.sql.session.timeZone", "UTC")
             .config("spark.ui.enabled", "false").getOrCreate())
    spark.sparkContext.setLogLevel("OFF")
    RECORDER.wrap(Q)
    import scripts.version_matrix as M

    M.UNNAMED_FALLBACK = False
    def stream(spark: Any, folder: Path) -> Any:
        # every file at once: the copy's files have new paths, so the restart reads them all again
        # (what matters is that the restart plans, loads the state and commits a batch)
        return spark.readStream.schema(Q.EVENT_SCHEMA).json(str(folder))

    Q.stream = stream
    # the land step of every writer lands the same files again with the same mtimes: the
    # extra file stays the only new one
    results: dict[str, dict[str, Any]] = {}
    for facts_file in sorted(OUT.glob("*/facts.json")):
        facts = json.loads(facts_file.read_text())
        written_by = facts["spark"]
        cases = case_list(_v(written_by))
        results[written_by] = {}
        for name, case in sorted(facts["cases"].items()):
            if "error" in case or name not in cases:
                continue
            fn, kw = cases[name]
            with tempfile.TemporaryDirectory(prefix="restart-") as tmp:
                root = Path(tmp) / name
                shutil.copytree(facts_file.parent / name, root)
                _move_source_logs(root / "cp", facts_file.parent / name, root)
                _more_input(root)
                RECORDER.progress = []
                try:
                    fn(spark, root, **kw)
                    ran = [p for p in RECORDER.progress if "addBatch" in (p.get("durationMs") or {})]
                    results[written_by][name] = {"ok": True, "batches": len(ran)}
                except Exception as e:  # noqa: BLE001 - the error is the outcome
                    results[written_by][name] = {"ok": False, "error": _err(e)}
            print(f"  {pyspark.__version__} ← {written_by} {name}: {results[written_by][name]}", flush=True)
    out.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    spark.stop()


def build(versions: list[str]) -> None:
    """Restart under each of ``versions`` (each result kept in ``.matrix/restarts-<v>.json``, so
    two builds for different versions can run side by side), then merge every result there into
    :data:`RESULTS` and the table."""
    for version in versions:
        py = VENVS / f"venv-{version}" / "bin" / "python"
        if not py.exists():
            sys.exit(f"{py} missing: run `make matrix` first")
        env = {**os.environ, "TZ": "UTC", "PYSPARK_PYTHON": str(py), "PYTHONPATH": str(ROOT)}
        print(f"[{version}] restarting every fixture", flush=True)
        subprocess.run([str(py), str(Path(__file__).resolve()), "restart", str(VENVS / f"restarts-{version}.json")],
                       check=True, env=env)
    observed: dict[str, Any] = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    for got in sorted(VENVS.glob("restarts-*.json")):
        observed[got.stem.removeprefix("restarts-")] = json.loads(got.read_text())
    RESULTS.write_text(json.dumps(observed, indent=1, sort_keys=True) + "\n")
    write_table(observed)


def write_table(observed: dict[str, Any]) -> None:
    """bench/COMPAT-MATRIX.md: one row per (written by, case), one column per restarting Spark."""
    restarters = sorted(observed, key=lambda v: tuple(int(x) for x in v.split(".")))
    rows: dict[tuple[str, str], dict[str, str]] = {}
    for by in restarters:
        for written_by, cases in observed[by].items():
            for name, outcome in cases.items():
                cell = "ok" if outcome["ok"] else outcome["error"].split(":")[0].rsplit(".", 1)[-1]
                rows.setdefault((written_by, name), {})[by] = cell
    lines = [
        "# Which Spark restarts which checkpoint (observed)",
        "",
        "Every checkpoint of `tests/fixtures/matrix/` (written by the Spark of the first column) restarted",
        "on a copy, with one more input file, by the Spark of each other column: `ok` (it ran its",
        "batches), or the error class it failed with. Written by `make restart-matrix`",
        "(scripts/restart_matrix.py); `streamwatch inspect` answers \"which Spark can restart this?\"",
        "and its tests hold that answer against this table (tests/fixtures/matrix/restarts.json).",
        "",
        "`AttributeError`, `ModuleNotFoundError` and `Py4JError` mean that pyspark lacks an API the",
        "case's query uses (`DataStreamReader.name` before 4.2, `transformWithStateInPandas` before",
        "4.0, `DataStreamWriter.name` before 4.2): that Spark cannot run the query at all. The other",
        "errors are Spark refusing the checkpoint (e.g. `IllegalArgumentException` for a join state",
        "format it does not know, `StreamingQueryException` for checkpoint format v2 on 3.5).",
        "\"ok\" means the restarted query ran its batches without an error, not that every state row",
        "was read as written: a list state written by 4.2+ (RocksDB merge operator v2, no delimiter",
        "between elements) restarts on 4.0/4.1 too.",
        "",
        "| written by | case | " + " | ".join(restarters) + " |",
        "|---|---|" + "---|" * len(restarters),
    ]
    for (written_by, name), cells in sorted(rows.items(), key=lambda kv: (tuple(int(x) for x in kv[0][0].split(".")), kv[0][1])):
        lines.append(f"| {written_by} | {name} | " + " | ".join(cells.get(v, "") for v in restarters) + " |")
    TABLE.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "table":
        write_table(json.loads(RESULTS.read_text()))
    elif len(sys.argv) >= 3 and sys.argv[1] == "restart":
        restart(Path(sys.argv[2]))
    elif len(sys.argv) >= 2 and sys.argv[1] == "build":
        build(sys.argv[2:] or list(VERSIONS))
    else:
        sys.exit(__doc__)
