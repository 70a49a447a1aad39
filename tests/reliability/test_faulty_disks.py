"""Faulty disks under the recorder: a recording path that cannot be created, and a disk that
fills up while ``streamwatch log`` records. The user gets one clear line on stderr, the
exit status says the output could not be written (4), and the queries keep running: their
checkpoints move on after the disk is full and the inspector finds them healthy."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from streamwatch.checkpoint import read_checkpoint
from streamwatch.cli import main
from streamwatch.events.jsonl import JsonlRecorder
from streamwatch.events.reader import ReadReport, read_events
from streamwatch.model.events import QueryIdle

ROOT = Path(__file__).resolve().parents[2]
STREAMWATCH = [sys.executable, "-m", "streamwatch.cli"] if not (ROOT / ".venv" / "bin" / "streamwatch").exists() else [str(ROOT / ".venv" / "bin" / "streamwatch")]


def test_recording_path_under_a_file_fails_before_spark_starts(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    t0 = time.monotonic()
    r = CliRunner().invoke(main, ["log", "--out", str(blocker / "sub" / "rec.jsonl"), "--duration", "1"])
    assert r.exit_code == 4, (r.exit_code, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot write" in lines[0] and "Not a directory" in lines[0], r.stderr
    assert time.monotonic() - t0 < 5, "it should fail before starting Spark"
    assert blocker.read_text() == "not a folder"


def test_recorder_library_raises_oserror_for_a_path_under_a_file(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(OSError):
        JsonlRecorder(tmp_path / "f" / "rec.jsonl")


def _limit_file_size(limit: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def test_recorder_past_the_file_size_limit_raises_a_clear_oserror(tmp_path):
    """RLIMIT_FSIZE in a child process: writes past the limit fail with EFBIG (Python ignores
    SIGXFSZ); the recorder raises OSError (the caller reports it), what was written before
    stays readable."""
    out = tmp_path / "rec.jsonl"
    code = (
        "import sys\n"
        "from streamwatch.events.jsonl import JsonlRecorder\n"
        "from streamwatch.model.events import QueryIdle\n"
        f"rec = JsonlRecorder({str(out)!r})\n"
        "n = 0\n"
        "try:\n"
        "    for i in range(100000):\n"
        "        rec.write(QueryIdle(id='q', run_id='r', timestamp=str(i))); n += 1\n"
        "except OSError as e:\n"
        "    print(n, e.strerror, file=sys.stderr); sys.exit(4)\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, preexec_fn=_limit_file_size(16384), timeout=60)
    assert p.returncode == 4, p.stderr
    written, reason = p.stderr.split(" ", 1)
    assert "File too large" in reason
    report = ReadReport()
    events = [e for e in read_events(out, report) if isinstance(e, QueryIdle)]
    assert len(events) >= int(written) - 1 and len(events) > 50
    assert [e.timestamp for e in events] == [str(i) for i in range(len(events))]


@pytest.fixture
def small_tmpfs(tmp_path):
    """A 24 KiB tmpfs (needs root with CAP_SYS_ADMIN; skipped otherwise)."""
    mnt = tmp_path / "small-disk"
    mnt.mkdir()
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24k", "tmpfs", str(mnt)], capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({p.stderr.strip() or p.returncode}); the RLIMIT_FSIZE test covers a full disk")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


@pytest.mark.spark
def test_log_keeps_the_queries_running_when_the_disk_fills_up(tmp_path, small_tmpfs, unchanged):
    """``streamwatch log`` (its own Spark, as users run it) recording onto a 24 KiB tmpfs: the
    disk fills after a few dozen events; stderr says so at once, the queries go on committing
    batches (two more after the last recorded one), SIGTERM then stops it with exit status 4,
    and the checkpoints are healthy. Every wait is on an event (a stderr line, a commit file),
    not on how much a busy machine gets done in N seconds."""
    import signal
    import threading

    out = small_tmpfs / "rec.jsonl"
    ws = tmp_path / "ws"
    env = {**os.environ, "STREAMWATCH_TABLE_FORMAT": "parquet", "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [*STREAMWATCH, "log", "--pipeline", "flights", "--out", str(out), "--workspace", str(ws), "--trigger", "processingTime=1 second",
         "--land-every", "1", "--max-files", "200", "--no-ui"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
    )
    lines: list[str] = []
    said = threading.Condition()

    def read() -> None:
        for line in proc.stderr:  # type: ignore[union-attr]
            with said:
                lines.append(line.rstrip("\n"))
                said.notify_all()
        with said:
            said.notify_all()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    commits = ws / "checkpoints" / "flights" / "bronze" / "commits"
    try:
        with said:
            assert said.wait_for(lambda: any("cannot write" in ln for ln in lines) or proc.poll() is not None, 600), lines[-10:]
        assert proc.poll() is None, lines[-20:]
        recorded = [e for e in read_events(out, ReadReport()) if getattr(e, "kind", None) == "progress" and e.name == "flights_bronze"]
        last_recorded = max((e.batch_id for e in recorded), default=-1)
        wanted = commits / str(last_recorded + 2)
        deadline = time.monotonic() + 600  # the event: bronze commits two more batches
        while not wanted.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert wanted.exists(), f"bronze never committed batch {last_recorded + 2} after the disk was full"
        with said:
            mark = len(lines)
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(300)
    finally:
        if proc.poll() is None:
            proc.kill()
    reader.join(30)
    err = "\n".join(lines)
    assert rc == 4, (rc, err[-2000:])
    assert "Traceback" not in err
    full = [ln for ln in lines if "cannot write" in ln]
    assert len(full) == 1 and "No space left on device" in full[0] and "the queries keep running" in full[0], err[-2000:]
    assert lines.index(full[0]) < mark, "the error must be said when it happens"
    assert any("events not recorded" in ln for ln in lines[mark:])
    # what was recorded is readable, and the queries went on after the disk was full
    report = ReadReport()
    recorded = [e for e in read_events(out, report) if getattr(e, "kind", None) == "progress" and e.name == "flights_bronze"]
    assert max((e.batch_id for e in recorded), default=-1) == last_recorded  # nothing after the failure
    cp_dir = unchanged(ws / "checkpoints" / "flights" / "bronze")
    cp = read_checkpoint(str(cp_dir))
    assert cp.last_committed_batch_id is not None and cp.last_committed_batch_id >= last_recorded + 2, (last_recorded, cp.last_committed_batch_id)
    bad = [f for f in cp.findings if f.severity == "error"]
    assert not bad, bad
