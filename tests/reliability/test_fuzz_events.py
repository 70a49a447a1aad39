"""Fuzzing the event readers: streamwatch recordings and Spark event logs, plain, rotated,
compressed and followed while written.

Every example mutates lines of a real recording (the flights run the dashboard tests replay)
or of the same events as a Spark event log — garbage, truncated and CRLF lines, unknown
kinds and event types, a newer schema version, JSON of the wrong type, deeply nested or
enormous lines, huge numbers, dropped fields, and a last line still being written — and
requires that the readers (``read_events`` and ``streamwatch events [--json]``):

* never raise anything but ``EventSourceError`` (and only for an unrecognisable file);
* skip and count: every non-empty recording line is yielded, counted as bad or unknown, or is
  a header;
* lose no intact event: the events of untouched lines all come out, in order.

Following (``--follow``): a writer rotating its file (``max_bytes``) while a follower reads,
with lines written in pieces, must deliver every event exactly once, in order.
"""

from __future__ import annotations

import gzip
import os
import shutil
import tempfile
import threading
import time
from itertools import pairwise
from pathlib import Path

import evmutate
import orjson
import pytest
from click.testing import CliRunner
from fuzzprofiles import found_case_twins, fuzz_settings
from hypothesis import given, note
from hypothesis import strategies as st

from streamwatch.cli import main
from streamwatch.events.jsonl import JsonlRecorder, decode, rotated_segments
from streamwatch.events.reader import EventSourceError, ReadReport, read_events
from tests.helpers.spark_codecs import lz4java

BASE_REC = evmutate.recording_lines()
BASE_LOG, BASE_LOG_KEYS = evmutate.eventlog_lines()


def _key(obj) -> tuple | None:
    if getattr(obj, "kind", None) not in ("started", "progress", "idle", "terminated"):
        return None
    return (obj.kind, obj.id, obj.run_id, getattr(obj, "batch_id", None))


def _is_subsequence(needles: list, hay: list) -> bool:
    it = iter(hay)
    return all(any(n == h for h in it) for n in needles)


def _read_all(path: Path) -> tuple[list, ReadReport]:
    report = ReadReport()
    try:
        objs = list(read_events(path, report))
    except EventSourceError as e:
        assert "\n" not in str(e).strip(), "EventSourceError messages are one line"
        raise
    return objs, report


def _cli(path: Path) -> None:
    runner = CliRunner()
    for args in (["events", str(path)], ["events", str(path), "--json"]):
        r = runner.invoke(main, args)
        assert r.exception is None or isinstance(r.exception, SystemExit), (args, r.exc_info)
        assert r.exit_code in (0, 4), (args, r.exit_code, r.stderr)
        assert "Traceback" not in r.output + r.stderr
        if r.exit_code == 0 and "--json" in args:
            for line in r.stdout.splitlines():
                assert decode(line) is not None or orjson.loads(line)
        if r.exit_code == 4:  # unreadable: one line on stderr (the events table in docs/recording.md)
            assert len(r.stderr.strip().splitlines()) == 1, (args, r.stderr)


def _compress(codec: str, data: bytes) -> bytes:
    if codec == ".gz":
        return gzip.compress(data)
    if codec == ".zstd":
        import zstandard

        return zstandard.ZstdCompressor().compress(data)
    if codec == ".lz4":
        return lz4java(data)
    return data


# --- recordings -----------------------------------------------------------------------------


@fuzz_settings(weight=3)
@given(data=st.data())
def test_mutated_recordings(data, case_stats):
    lines, intact, cut = evmutate.mutated_lines(data.draw, BASE_REC, "recording")
    segments = data.draw(st.lists(st.integers(1, len(lines) - 1), max_size=3, unique=True), label="rotation points") if len(lines) > 2 else []
    td = tempfile.mkdtemp(prefix="swfuzz-ev-")
    try:
        path = Path(td) / "events.jsonl"
        cuts = [0, *sorted(segments), len(lines)]
        parts = [b"".join(lines[a:b]) for a, b in pairwise(cuts)]
        for n, part in enumerate(parts[:-1], 1):  # rotated segments, oldest first
            path.with_name(f"events.jsonl.{n}").write_bytes(part)
        path.write_bytes(parts[-1])
        note(f"segments={len(parts)} cut_last={cut}")
        objs, report = _read_all(path)
        nonempty = [ln for ln in lines if ln.strip()]
        headerish = sum(1 for ln in nonempty if b'"header"' in ln)
        # a line that ends a segment without its newline is reported as truncated too
        accounted = len(objs) + report.bad_lines + report.unknown
        assert len(nonempty) - headerish <= accounted <= len(nonempty), (len(objs), report, len(nonempty), headerish)
        want = [evmutate.line_event_key(BASE_REC[i], "recording") for i in sorted(intact)]
        want = [k for k in want if k is not None]
        got = [k for k in (_key(o) for o in objs) if k is not None]
        assert _is_subsequence(want, got), "an intact event was lost"
        case_stats.skipped_lines += report.bad_lines + report.unknown
        if data.draw(st.integers(0, 3), label="cli") == 0:
            _cli(path)
        case_stats.cases += 1
    finally:
        shutil.rmtree(td)


# --- Spark event logs -------------------------------------------------------------------------


@fuzz_settings(weight=3)
@given(data=st.data())
def test_mutated_spark_event_logs(data, case_stats):
    lines, intact, cut = evmutate.mutated_lines(data.draw, BASE_LOG, "eventlog")
    codec = data.draw(st.sampled_from(["", ".gz", ".zstd", ".lz4", "rolling"]), label="codec")
    td = tempfile.mkdtemp(prefix="swfuzz-ev-")
    try:
        root = Path(td)
        blob = b"".join(lines)
        truncated_stream = False
        if codec == "rolling":
            path = root / "eventlog_v2_local-1767261600000"
            path.mkdir()
            k = data.draw(st.integers(1, 4), label="rolling files")
            step = max(1, len(lines) // k)
            for n, i in enumerate(range(0, len(lines), step), 1):
                (path / f"events_{n}_local-1767261600000").write_bytes(b"".join(lines[i : i + step]))
            (path / "appstatus_local-1767261600000.inprogress").write_bytes(b"")
        else:
            path = root / f"local-1767261600000{codec}"
            payload = _compress(codec, blob)
            if codec and data.draw(st.booleans(), label="compressed stream cut"):
                payload = payload[: data.draw(st.integers(0, max(0, len(payload) - 1)))]
                truncated_stream = True
            if codec and data.draw(st.integers(0, 4), label="flip") == 0 and payload:
                i = data.draw(st.integers(0, len(payload) - 1))
                payload = payload[:i] + bytes([payload[i] ^ 0x5A]) + payload[i + 1 :]
                truncated_stream = True
            path.write_bytes(payload)
        note(f"codec={codec!r} truncated_stream={truncated_stream} cut_last={cut}")
        try:
            objs, report = _read_all(path)
        except EventSourceError:
            assert truncated_stream or not any(b"StreamingQueryListener$" in ln or b'"Event"' in ln for ln in lines[:1]), "a readable event log was refused"
            case_stats.cases += 1
            return
        got = [k for k in (_key(o) for o in objs) if k is not None]
        want = [evmutate.line_event_key(BASE_LOG[i], "eventlog") for i in sorted(intact)]
        want = [k for k in want if k is not None]
        if not truncated_stream:  # a cut or corrupted compressed stream: no crash is the bar
            assert _is_subsequence(want, got), "an intact event was lost"
        case_stats.skipped_lines += report.bad_lines
        if data.draw(st.integers(0, 3), label="cli") == 0:
            _cli(path)
        case_stats.cases += 1
    finally:
        shutil.rmtree(td)


# --- following a recording that rotates while it is written ------------------------------------


def _progress_events(n: int) -> list:
    from streamwatch.model.events import QueryProgress

    proto = next(orjson.loads(ln)["event"] for ln in BASE_REC if b'"kind": "progress"' in ln)
    return [QueryProgress.from_dict({**proto, "batchId": i}) for i in range(n)]


@fuzz_settings(weight=0.4)
@given(
    n=st.integers(5, 120),
    max_bytes=st.integers(200, 20_000),
    flush_every=st.integers(1, 5),
    pauses=st.lists(st.floats(0, 0.02), min_size=1, max_size=5),
)
def test_follow_survives_rotation(n, max_bytes, flush_every, pauses, case_stats):
    events = _progress_events(n)
    td = tempfile.mkdtemp(prefix="swfuzz-follow-")
    try:
        path = Path(td) / "live.jsonl"
        stop = threading.Event()
        got: list = []
        report = ReadReport()

        def follow() -> None:
            for obj in read_events(path, report, follow=True, stop=stop, poll_s=0.01):
                got.append(obj)

        reader = threading.Thread(target=follow, daemon=True)
        reader.start()
        with JsonlRecorder(path, flush_every=flush_every, max_bytes=max_bytes) as rec:
            for i, e in enumerate(events):
                rec.write(e)
                if i % 7 == 0:
                    time.sleep(pauses[i % len(pauses)])
        deadline = time.monotonic() + 20
        while len([o for o in got if _key(o)]) < n and time.monotonic() < deadline:
            time.sleep(0.02)
        stop.set()
        reader.join(5)
        assert not reader.is_alive(), "the follower did not stop"
        batches = [o.batch_id for o in got if _key(o)]
        assert batches == list(range(n)), f"rotations={len(rotated_segments(path))} got {batches[:20]}…"
        assert report.bad_lines == 0, report.problems
        case_stats.cases += 1
    finally:
        shutil.rmtree(td)


@fuzz_settings(weight=0.4)
@given(split=st.floats(0.01, 0.99), pause=st.floats(0.0, 0.05), fmt=st.sampled_from(["recording", "eventlog"]))
def test_follow_waits_for_a_line_being_written(split, pause, fmt, case_stats):
    """A line written in two pieces (the writer is mid-line when the follower reads) comes out
    once, whole, when its newline arrives — never as garbage."""
    base = BASE_REC if fmt == "recording" else BASE_LOG
    event_lines = [ln for ln in base if evmutate.line_event_key(ln, fmt)]
    first, second = event_lines[0], event_lines[1]
    td = tempfile.mkdtemp(prefix="swfuzz-follow-")
    try:
        path = Path(td) / ("live.jsonl" if fmt == "recording" else "local-1")
        path.write_bytes(base[0] + first)
        stop = threading.Event()
        got: list = []
        report = ReadReport()
        reader = threading.Thread(target=lambda: got.extend(read_events(path, report, follow=True, stop=stop, poll_s=0.01)), daemon=True)
        reader.start()
        cut = max(1, int(len(second) * split))
        with open(path, "ab") as fh:
            fh.write(second[:cut])
            fh.flush()
            time.sleep(pause)
            fh.write(second[cut:])
        deadline = time.monotonic() + 10
        while len([o for o in got if _key(o)]) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        stop.set()
        reader.join(5)
        keys = [_key(o) for o in got if _key(o)]
        assert keys == [evmutate.line_event_key(first, fmt), evmutate.line_event_key(second, fmt)]
        assert report.bad_lines == 0, report.problems
        case_stats.cases += 1
    finally:
        shutil.rmtree(td)


@pytest.mark.parametrize("what", ["folder", "fifo", "binary", "empty-dir"])
def test_unreadable_inputs_are_one_line_errors(tmp_path, what):
    if what == "folder":
        p = tmp_path / "x"
        (p / "a").mkdir(parents=True)
        (p / "b").mkdir()
    elif what == "fifo":
        p = tmp_path / "fifo.jsonl"
        os.mkfifo(p)
    elif what == "binary":
        p = tmp_path / "bin.jsonl"
        p.write_bytes(b"\x00\x01\x02" * 100)
    else:
        p = tmp_path / "empty"
        p.mkdir()
    done = threading.Event()
    result: dict = {}

    def run() -> None:
        result["r"] = CliRunner().invoke(main, ["events", str(p)])
        done.set()

    threading.Thread(target=run, daemon=True).start()
    hung = not done.wait(20)
    if hung and what == "fifo":  # release the reader (a writer that closes at once: EOF)
        os.close(os.open(p, os.O_WRONLY | os.O_NONBLOCK))
        done.wait(5)
    assert not hung, f"streamwatch events hung on a {what}"
    r = result["r"]
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exc_info
    assert r.exit_code == 4 and len(r.stderr.strip().splitlines()) == 1, (r.exit_code, r.stderr)


# cases the `reliability` profile recorded (fuzzprofiles.FOUND), replayed in every run
globals().update(found_case_twins(globals()))
