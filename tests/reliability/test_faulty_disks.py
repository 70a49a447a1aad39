"""Faulty disks under the recorder: a recording path that cannot be created, and a disk that
fills up while ``streamwatch log`` records. The user gets one clear line on stderr, the
exit status says the output could not be written (4), and the queries keep running: their
checkpoints move on after the disk is full and the inspector finds them healthy."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from streamwatch.checkpoint import read_checkpoint
from streamwatch.cli import main
from streamwatch.events.jsonl import JsonlRecorder
from streamwatch.events.reader import ReadReport, read_events
from streamwatch.model.events import QueryIdle, QueryProgress

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


class StderrLines:
    """A process's stderr lines as they come, read on a thread; :meth:`wait_for` waits on a
    line (or the process's end), not on time."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.lines: list[str] = []
        self.said = threading.Condition()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            with self.said:
                self.lines.append(line.rstrip("\n"))
                self.said.notify_all()
        with self.said:
            self.said.notify_all()

    def wait_for(self, text: str, timeout_s: float) -> bool:
        with self.said:
            return self.said.wait_for(lambda: any(text in ln for ln in self.lines) or self.proc.poll() is not None,
                                      timeout_s)

    def count(self) -> int:
        with self.said:
            return len(self.lines)


def _bronze_batches_recorded(out: Path) -> int:
    """The last batch id of the recorded bronze progress (-1: none)."""
    recorded = [e for e in read_events(out, ReadReport()) if isinstance(e, QueryProgress) and e.name == "flights_bronze"]
    return max((e.batch_id for e in recorded), default=-1)


def _said_when_it_happened(lines: list[str], mark: int, rc: int) -> None:
    """Exit 4, no traceback, the full disk said once when it happened, the events not
    recorded said at the end (after ``mark``, the line count at SIGTERM)."""
    err = "\n".join(lines)
    assert rc == 4, (rc, err[-2000:])
    assert "Traceback" not in err
    full = [ln for ln in lines if "cannot write" in ln]
    assert len(full) == 1 and "No space left on device" in full[0] and "the queries keep running" in full[0], err[-2000:]
    assert lines.index(full[0]) < mark, "the error must be said when it happens"
    assert any("events not recorded" in ln for ln in lines[mark:])


@pytest.mark.spark
def test_log_keeps_the_queries_running_when_the_disk_fills_up(tmp_path, small_tmpfs, unchanged):
    """``streamwatch log`` (its own Spark, as users run it) recording onto a 24 KiB tmpfs: the
    disk fills after a few dozen events; stderr says so at once, the queries go on committing
    batches (two more after the last recorded one), SIGTERM then stops it with exit status 4,
    and the checkpoints are healthy. Every wait is on an event (a stderr line, a commit file),
    not on how much a busy machine gets done in N seconds."""
    import signal

    out = small_tmpfs / "rec.jsonl"
    ws = tmp_path / "ws"
    env = {**os.environ, "STREAMWATCH_TABLE_FORMAT": "parquet", "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [*STREAMWATCH, "log", "--pipeline", "flights", "--out", str(out), "--workspace", str(ws), "--trigger", "processingTime=1 second",
         "--land-every", "1", "--max-files", "200", "--no-ui"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
    )
    stderr = StderrLines(proc)
    commits = ws / "checkpoints" / "flights" / "bronze" / "commits"
    try:
        assert stderr.wait_for("cannot write", 600), stderr.lines[-10:]
        assert proc.poll() is None, stderr.lines[-20:]
        last_recorded = _bronze_batches_recorded(out)
        wanted = commits / str(last_recorded + 2)
        deadline = time.monotonic() + 600  # the event: bronze commits two more batches
        while not wanted.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert wanted.exists(), f"bronze never committed batch {last_recorded + 2} after the disk was full"
        mark = stderr.count()
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(300)
    finally:
        if proc.poll() is None:
            proc.kill()
    stderr.thread.join(30)
    _said_when_it_happened(stderr.lines, mark, rc)
    # what was recorded is readable, and the queries went on after the disk was full
    assert _bronze_batches_recorded(out) == last_recorded  # nothing after the failure
    cp_dir = unchanged(ws / "checkpoints" / "flights" / "bronze")
    cp = read_checkpoint(str(cp_dir))
    assert cp.last_committed_batch_id is not None and cp.last_committed_batch_id >= last_recorded + 2, (last_recorded, cp.last_committed_batch_id)
    bad = [f for f in cp.findings if f.severity == "error"]
    assert not bad, bad
