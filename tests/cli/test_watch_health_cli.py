"""`streamwatch watch --log` and the health verdict: ``query-health`` records, ``--once
--check``'s exit code, the ``streamwatch_checkpoint_health`` gauge, ``--notify`` POSTs
received by a real HTTP server on loopback, and the shipped alert rules and Grafana
dashboard checked against the gauges a real ``watch --prometheus`` serves. The accounts:
the checkpoint's files as written here (batch and commit times, files landed and read), the
bodies the server received, the metric names the scrape returned. The verdicts themselves
are held against Spark in tests/spark/test_health_truth.py."""

from __future__ import annotations

import http.server
import json
import os
import queue
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner

from streamwatch.cli import main
from streamwatch.monitoring import path as shipped
from tests.helpers.fake_checkpoint import QUERY_ID, FakeCheckpoint

EXE = str(Path(sys.executable).parent / "streamwatch")
EVERY = 1_000


def _landed(folder: Path, name: str, mtime_ms: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / name
    p.write_text("{}")
    os.utime(p, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
    return p


def _stopped(tmp_path: Path, waiting: int = 2) -> tuple[FakeCheckpoint, Path, int]:
    """Two batches read f0 and f1 an hour ago; ``waiting`` files landed since, unread.
    Returns the checkpoint, the landing folder and batch 1's commit time (ms)."""
    now = int(time.time() * 1000)
    landing = tmp_path / "landing"
    cp = FakeCheckpoint(tmp_path / "checkpoints/p/q")
    for b in range(2):
        f = _landed(landing, f"f{b}.json", now - 3_700_000 + b)
        cp.plan(b, now - 3_600_000 + b * EVERY, [f"file://{f}"])
        cp.commit(b, now - 3_600_000 + b * EVERY + 200)
    for i in range(waiting):
        _landed(landing, f"w{i}.json", now - 1_800_000 + i)
    return cp, landing, now - 3_600_000 + EVERY + 200


def _health_lines(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if '"query-health"' in line]


def test_once_writes_the_verdict_and_check_maps_it_to_the_exit_code(tmp_path):
    _cp, _landing, committed = _stopped(tmp_path / "a")
    root = str(tmp_path / "a/checkpoints/p/q")
    r = CliRunner().invoke(main, ["watch", root, "--log", "--once"])
    assert r.exit_code == 0, r.output  # nothing in flight: not stuck, today's exit code
    (h,) = _health_lines(r.stdout)
    assert (h["id"], h["health"], h["previous"], h["backlog"], h["batchId"], h["sinceMs"]) == (
        QUERY_ID, "stopped", None, 2, 1, committed)
    assert CliRunner().invoke(main, ["watch", root, "--log", "--once", "--check"]).exit_code == 1
    _stopped(tmp_path / "b", waiting=0)  # the same query with nothing waiting: idle
    r = CliRunner().invoke(main, ["watch", str(tmp_path / "b/checkpoints/p/q"), "--log", "--once", "--check"])
    assert r.exit_code == 0, r.output
    assert [h["health"] for h in _health_lines(r.stdout)] == ["idle"]


def test_check_and_notify_need_log_and_once(tmp_path):
    _stopped(tmp_path)
    root = str(tmp_path / "checkpoints/p/q")
    assert CliRunner().invoke(main, ["watch", root, "--check"]).exit_code == 2
    assert CliRunner().invoke(main, ["watch", root, "--log", "--check"]).exit_code == 2
    assert CliRunner().invoke(main, ["watch", root, "--notify", "http://127.0.0.1:1/"]).exit_code == 2


class _Hook(http.server.BaseHTTPRequestHandler):
    received: queue.Queue = queue.Queue()

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.put((self.path, self.headers["Content-Type"], json.loads(body)))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def hook():
    _Hook.received = queue.Queue()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook", _Hook.received
    server.shutdown()
    server.server_close()


def test_notify_posts_each_health_change_to_a_real_server(tmp_path, hook):
    url, received = hook
    cp, landing, _ = _stopped(tmp_path)
    root = cp.root
    p = subprocess.Popen([EXE, "watch", str(root), "--log", "--poll", "0.1", "--notify", url],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        path, ctype, first = received.get(timeout=60)
        assert (path, ctype) == ("/hook", "application/json")
        assert (first["query"], first["checkpoint"], first["from"], first["to"]) == ("q", str(root), None, "stopped")
        assert "2 file(s) wait" in first["reason"] and isinstance(first["atMs"], int)
        # the query runs again: batch 2 reads the two waiting files and commits now
        now = int(time.time() * 1000)
        cp.plan(2, now - 100, [f"file://{landing / 'w0.json'}", f"file://{landing / 'w1.json'}"])
        cp.commit(2, now)
        _, _, second = received.get(timeout=60)
        assert (second["from"], second["to"]) == ("stopped", "ok")
        assert second["atMs"] >= now
    finally:
        p.terminate()
        out, err = p.communicate(timeout=30)
    assert "--notify" not in err  # every POST was received
    assert [(h["previous"], h["health"]) for h in _health_lines(out)] == [(None, "stopped"), ("stopped", "ok")]


def test_notify_failures_are_reported_once_and_never_fatal(tmp_path, capsys):
    from streamwatch.analysis.health_window import Health, HealthVerdict
    from streamwatch.analysis.records import QueryHealth
    from streamwatch.cli.watch_cmd import Notifier

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    n = Notifier(f"http://127.0.0.1:{port}/hook", timeout_s=2.0)
    for health in ("stopped", "ok", "stopped"):
        n(QueryHealth(QUERY_ID, "q", "/cp", 1, HealthVerdict(Health(health), "r", 1)))
    err = capsys.readouterr().err
    assert err.count("--notify") == 1 and "further failures not shown" in err
    assert (n.sent, n.failures) == (0, 3)
    _stopped(tmp_path)
    r = subprocess.run([EXE, "watch", str(tmp_path / "checkpoints/p/q"), "--log", "--once", "--notify",
                        f"http://127.0.0.1:{port}/hook"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stderr.count("--notify") == 1
    assert [h["health"] for h in _health_lines(r.stdout)] == ["stopped"]


def _scrape(root: Path, until: str) -> str:
    """A running ``watch --prometheus 0`` on ``root``: its /metrics once ``until`` is served."""
    p = subprocess.Popen([EXE, "watch", str(root), "--log", "--poll", "0.1", "--prometheus", "0"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = next((line.split("metrics at ", 1)[1].strip() for line in p.stderr if "metrics at " in line), None)
        assert url, "no metrics line"
        for line in p.stdout:  # the gauges are set before the records are written
            if json.loads(line)["kind"] == "query-health":
                break
        body = urllib.request.urlopen(url, timeout=10).read().decode()
        assert until in body, body
        return body
    finally:
        p.terminate()
        p.wait(30)


def test_health_gauge_is_one_for_the_current_state_only(tmp_path):
    _stopped(tmp_path)
    body = _scrape(tmp_path / "checkpoints/p/q", "streamwatch_checkpoint_health{")
    values = {m.group(1): float(m.group(2)) for m in re.finditer(
        r'^streamwatch_checkpoint_health\{id="' + QUERY_ID + r'",query="q",state="(\w+)"\} (\S+)$', body, re.M)}
    assert values == {"ok": 0.0, "lagging": 0.0, "stalled": 0.0, "stopped": 1.0, "failing": 0.0, "idle": 0.0,
                      "unknown": 0.0}


DURATION = re.compile(r"^(\d+(ms|s|m|h|d|w|y))+$")
METRIC = re.compile(r"\bstreamwatch_[a-z_]+\b")


def _served_metric_names(tmp_path: Path) -> set[str]:
    _stopped(tmp_path)
    body = _scrape(tmp_path / "checkpoints/p/q", "streamwatch_checkpoint_source_lag_seconds{")
    return {line.split()[2] for line in body.splitlines() if line.startswith("# TYPE ")}


def _check_rules(doc: dict) -> list[str]:
    """The structure promtool's ``check rules`` requires; the exprs."""
    assert set(doc) == {"groups"} and isinstance(doc["groups"], list) and doc["groups"]
    names = [g["name"] for g in doc["groups"]]
    assert len(set(names)) == len(names), "group names must be unique"
    exprs = []
    for g in doc["groups"]:
        assert set(g) <= {"name", "interval", "limit", "rules"} and g["rules"], g
        for rule in g["rules"]:
            assert ("alert" in rule) != ("record" in rule), rule
            assert set(rule) <= {"alert", "record", "expr", "for", "keep_firing_for", "labels", "annotations"}, rule
            assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", rule.get("alert") or rule["record"]), rule
            assert isinstance(rule["expr"], str) and rule["expr"].strip(), rule
            assert rule["expr"].count("(") == rule["expr"].count(")") and rule["expr"].count("{") == rule["expr"].count("}")
            if "for" in rule:
                assert DURATION.fullmatch(rule["for"]), rule["for"]
            for key in ("labels", "annotations"):
                assert all(isinstance(k, str) and isinstance(v, str) for k, v in rule.get(key, {}).items()), rule
            exprs.append(rule["expr"])
    return exprs


def test_shipped_alert_rules_and_dashboard_use_only_served_gauges(tmp_path):
    served = _served_metric_names(tmp_path)
    assert {"streamwatch_checkpoint_health", "streamwatch_checkpoint_source_lag_seconds",
            "streamwatch_checkpoint_source_catching_up"} <= served
    dashboard = json.loads(shipped("grafana.json").read_text())
    targets = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    assert targets and all(METRIC.findall(e) for e in targets)
    exprs = list(targets)
    assert dashboard["uid"] and all({"id", "type", "title", "gridPos", "targets"} <= set(p) for p in dashboard["panels"])
    yaml = pytest.importorskip("yaml", reason="PyYAML not installed: alerts.yml not loaded")
    rules = _check_rules(yaml.safe_load(shipped("alerts.yml").read_text()))
    assert any("streamwatch_checkpoint_health" in e for e in rules)
    assert any("deriv(streamwatch_checkpoint_source_lag_seconds" in e for e in rules)
    assert any("streamwatch_checkpoint_source_catching_up == 0" in e for e in rules)
    exprs += rules
    referenced = {name for e in exprs for name in METRIC.findall(e)}
    assert referenced - served == set(), f"not served by watch --prometheus: {referenced - served}"


PROMETHEUS = Path(__file__).resolve().parents[2] / ".tools" / "bin" / "prometheus"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _api(base: str, path: str) -> dict:
    return json.loads(urllib.request.urlopen(base + path, timeout=10).read())["data"]


@pytest.mark.skipif(not PROMETHEUS.is_file(), reason=f"no Prometheus server at {PROMETHEUS}: `make prometheus` builds it")
def test_a_real_prometheus_loads_the_shipped_rules_and_scrapes_a_running_watch(tmp_path):
    """The shipped alerts.yml loaded by a real Prometheus server on loopback, scraping a running
    ``watch --prometheus`` on a stopped query: every rule evaluates (health ok), the scraped
    health gauge is the verdict, and the stopped-query alert is pending or firing for it."""
    _stopped(tmp_path)
    watch = subprocess.Popen([EXE, "watch", str(tmp_path / "checkpoints/p/q"), "--log", "--poll", "0.5",
                              "--prometheus", "0"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    prom = None
    try:
        assert watch.stderr is not None
        url = next((line.split("metrics at ", 1)[1].strip() for line in watch.stderr if "metrics at " in line), None)
        assert url, "no metrics line"
        target = url.split("//", 1)[1].split("/", 1)[0]
        port = _free_port()
        (tmp_path / "prometheus.yml").write_text(
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
            f"rule_files: ['{shipped('alerts.yml')}']\n"
            f"scrape_configs: [{{job_name: streamwatch, static_configs: [{{targets: ['{target}']}}]}}]\n")
        prom = subprocess.Popen([str(PROMETHEUS), f"--config.file={tmp_path / 'prometheus.yml'}",
                                 f"--storage.tsdb.path={tmp_path / 'tsdb'}", f"--web.listen-address=127.0.0.1:{port}"],
                                stdout=subprocess.DEVNULL, stderr=(tmp_path / "prometheus.log").open("w"))
        base = f"http://127.0.0.1:{port}"
        seen: dict[str, object] = {}
        deadline = time.monotonic() + 120

        def ready() -> bool:
            try:
                groups = _api(base, "/api/v1/rules")["groups"]
                stopped = _api(base, '/api/v1/query?query=streamwatch_checkpoint_health{state="stopped"}')["result"]
                alerts = _api(base, "/api/v1/alerts")["alerts"]
            except OSError as e:  # not listening yet
                seen["error"] = str(e)
                return False
            seen.update(rules=[(r["name"], r["health"]) for g in groups for r in g["rules"]], stopped=stopped,
                        alerts=[(a["labels"]["alertname"], a["state"]) for a in alerts])
            return bool(groups) and all(r["health"] == "ok" for g in groups for r in g["rules"]) and \
                any(a["labels"]["alertname"] == "StreamwatchQueryStoppedOrFailing" for a in alerts)

        while not ready():
            assert prom.poll() is None, (tmp_path / "prometheus.log").read_text()[-2000:]
            assert time.monotonic() < deadline, f"Prometheus never showed the rules evaluated and the alert: {seen}"
            time.sleep(0.5)
        rules = dict(seen["rules"])  # type: ignore[arg-type]
        assert {"StreamwatchQueryNotOk", "StreamwatchQueryStoppedOrFailing", "StreamwatchSourceLagRising"} <= set(rules)
        (series,) = seen["stopped"]  # type: ignore[misc]
        assert series["metric"]["query"] == "q" and series["metric"]["id"] == QUERY_ID and series["value"][1] == "1"
        alert = next(a for a in _api(base, "/api/v1/alerts")["alerts"]
                     if a["labels"]["alertname"] == "StreamwatchQueryStoppedOrFailing")
        assert alert["state"] in ("pending", "firing") and alert["labels"]["state"] == "stopped"
        assert alert["labels"]["query"] == "q"
    finally:
        for p in (prom, watch):
            if p is not None:
                p.terminate()
                p.wait(30)
