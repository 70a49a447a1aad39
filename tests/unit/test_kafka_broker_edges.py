"""LocalKafka's edges without a broker: why it cannot start (jars, java) in one line and no
folder left behind, stop() escalating to SIGKILL for a process that ignores SIGTERM and
removing only a folder it owns (real child processes stand in for the broker's JVM)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from streamwatch.spark.kafka_broker import KafkaBrokerError, LocalKafka, broker_available, new_cluster_id


def test_no_jars_or_no_java_is_one_line_and_no_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("STREAMWATCH_JARS", str(tmp_path / "none"))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    ok, why = broker_available()
    assert not ok and str(tmp_path / "none" / "kafka-broker") in why and "\n" not in why
    with pytest.raises(KafkaBrokerError, match="Kafka broker jars not in"):
        LocalKafka.start()
    jars = tmp_path / "jars" / "kafka-broker"
    jars.mkdir(parents=True)
    (jars / "kafka_2.13-4.0.0.jar").write_bytes(b"")
    (jars / ".resolved").write_text("")
    monkeypatch.setenv("STREAMWATCH_JARS", str(tmp_path / "jars"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    assert broker_available() == (False, "java not found on PATH")
    with pytest.raises(KafkaBrokerError, match="java not found on PATH"):
        LocalKafka.start()
    assert not list(tmp_path.glob("streamwatch-kafka-*"))


def test_stop_grace_then_kill_is_quick(tmp_path):
    code = ("import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
            "print('ready', flush=True); time.sleep(600)")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    kept = tmp_path / "given"
    kept.mkdir()
    log = open(kept / "broker.log", "ab")  # noqa: SIM115 - handed to LocalKafka, whose stop() must close it
    broker = LocalKafka("127.0.0.1:1", kept, proc, owns_dir=False, _log=log)
    broker.stop(grace_s=0.2)
    assert proc.returncode == -9  # SIGKILL once the grace period passed
    assert log.closed and kept.is_dir()  # a folder the caller gave is never removed
    broker.stop()  # idempotent


def test_stop_on_leaving_the_block_removes_a_folder_it_owns(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    owned = tmp_path / "streamwatch-kafka-x"
    owned.mkdir()
    with LocalKafka("127.0.0.1:1", owned, proc, owns_dir=True) as broker:
        assert broker.bootstrap == "127.0.0.1:1"
    assert proc.returncode == -15  # SIGTERM was enough
    assert not owned.exists()


def test_a_cluster_id_never_starts_with_a_dash():
    """One in 64 ids started with ``-`` and the storage tool refused it as an option (seen
    as a broker that did not start in a test run): ids are drawn again, as Kafka's own."""
    ids = [new_cluster_id() for _ in range(5000)]  # without the redraw ~78 would start with "-"
    assert not [i for i in ids if i.startswith("-")]
    assert {len(i) for i in ids} == {22} and len(set(ids)) == len(ids)
    assert set("".join(ids)) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
