"""The feeder when landing fails on a real disk (no JVM): the landing folder of a real
:class:`OrdersFactory` is replaced by a regular file after the factory was made, so writing
the next order file raises ``NotADirectoryError`` — what a user sees when the workspace is
moved or cleaned away under a running dashboard. The error goes to ``on_error`` once and the
feeder stops landing (the dashboard shows it as a notice and keeps running); without
``on_error`` the error never escapes into the caller or a thread's traceback."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

from streamwatch.feeder import Feeder

from sample_pipelines.orders.factory import OrdersFactory

WAIT_S = 60.0  # only a deadline for a hang: the waits below are on events


def _break(folder: Path) -> None:
    """The landing folder becomes a regular file: every later write under it fails."""
    shutil.rmtree(folder)
    folder.write_text("not a folder any more\n")


def _landings_wait_for(factory: OrdersFactory, lock: threading.Lock) -> None:
    """Each landing of ``factory`` holds ``lock``: the test breaks the folder under it, so a
    scheduled landing sees the folder whole or a file, never the moment it is missing (that
    moment would be a ``FileNotFoundError``, not the error a moved workspace gives)."""
    land = factory.land

    def locked(n_files: int = 1) -> list[Path]:
        with lock:
            return land(n_files)

    factory.land = locked  # type: ignore[method-assign]


def test_a_failed_first_landing_is_reported_and_nothing_starts(tmp_path):
    folder = tmp_path / "landing"
    factory = OrdersFactory(folder)
    _break(folder)
    errors: list[Exception] = []
    feeder = Feeder(factory, every_s=0.01, initial_files=3, on_error=errors.append)
    assert feeder.start() is feeder
    assert len(errors) == 1 and isinstance(errors[0], NotADirectoryError), errors
    assert feeder.landed == []
    assert not feeder._thread.is_alive(), "no schedule after a failed first landing"
    feeder.stop(timeout=1)  # a feeder that never started stops at once
    assert factory.next_file == 1


def test_a_failed_first_landing_without_on_error_does_not_raise(tmp_path):
    folder = tmp_path / "landing"
    factory = OrdersFactory(folder)
    _break(folder)
    feeder = Feeder(factory, every_s=0.01, initial_files=1).start()
    assert feeder.landed == [] and not feeder._thread.is_alive()


def test_a_later_landing_failure_is_reported_once_and_the_feeder_stops(tmp_path):
    folder = tmp_path / "landing"
    factory = OrdersFactory(folder)
    errors: list[Exception] = []
    failed = threading.Event()

    def on_error(e: Exception) -> None:
        errors.append(e)
        failed.set()

    lock = threading.Lock()
    _landings_wait_for(factory, lock)
    feeder = Feeder(factory, every_s=0.01, initial_files=2, on_error=on_error).start()
    assert [p.name for p in feeder.landed] == ["orders_000001.json", "orders_000002.json"]
    with lock:
        _break(folder)
    assert failed.wait(WAIT_S), "the failed scheduled landing was never reported"
    feeder._thread.join(WAIT_S)
    assert not feeder._thread.is_alive(), "the feeder keeps landing after an error"
    feeder.stop()
    assert len(errors) == 1 and isinstance(errors[0], NotADirectoryError), errors
    assert len(feeder.landed) >= 2 and all(p.name.startswith("orders_") for p in feeder.landed)


def test_a_later_landing_failure_without_on_error_ends_the_thread_quietly(tmp_path):
    folder = tmp_path / "landing"
    factory = OrdersFactory(folder)
    feeder = Feeder(factory, every_s=0.01, initial_files=1).start()
    _break(folder)
    feeder._thread.join(WAIT_S)  # ends on the error, not on stop(): stop() was never called
    assert not feeder._thread.is_alive()
    assert factory.next_file >= 2


def test_hold_stops_the_schedule_and_the_backlog_counts_what_the_source_log_lists(tmp_path):
    """A feeder held lands nothing on its schedule; :class:`LandingBacklog` counts the landed
    files that no file-source log (``sources/0/<n>``, written here as Spark writes it) lists."""
    from streamwatch.feeder import LandingBacklog

    folder = tmp_path / "landing"
    factory = OrdersFactory(folder)
    held = threading.Event()
    calls = [0]

    def hold() -> bool:
        calls[0] += 1
        if calls[0] >= 3:
            held.set()
        return True

    feeder = Feeder(factory, every_s=0.01, initial_files=2, hold=hold).start()
    assert held.wait(WAIT_S)
    feeder.stop(timeout=5)
    assert len(feeder.landed) == 2 and feeder.held >= 3
    landed = sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))
    (folder / ".next.json.tmp").write_text("being written")  # not landed yet: not counted
    cp = tmp_path / "cp"
    assert LandingBacklog(folder, [cp]).unread() == 2  # no checkpoint yet: nothing read
    (cp / "sources" / "0").mkdir(parents=True)
    entry = '{"path":"file://%s","timestamp":1,"batchId":0}' % (folder / landed[0])
    (cp / "sources" / "0" / "0").write_text("v1\n" + entry + "\n")
    assert LandingBacklog(folder, [cp]).unread() == 1
    assert LandingBacklog(tmp_path / "missing", [cp]).unread() == 0
