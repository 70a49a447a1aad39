"""Spark Connect URLs without a server: `--remote` parsing with one-line errors that never
print a token, and an unreachable server reported at once (a loopback port nobody listens
on), before pyspark's client would retry for minutes."""

from __future__ import annotations

import socket

import pytest

from streamwatch.spark.connect import (
    DEFAULT_PORT,
    ConnectError,
    check_reachable,
    connect_session,
    is_connect_session,
    parse_remote,
    public_url,
)


def _closed_port() -> int:
    """A loopback port that refuses connections (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_parse_remote_and_default_port():
    assert parse_remote("sc://127.0.0.1:15010") == ("127.0.0.1", 15010)
    assert parse_remote("  sc://spark.example/;token=abc;use_ssl=true ") == ("spark.example", DEFAULT_PORT)


@pytest.mark.parametrize(("url", "message"), [
    ("http://host:15002", "--remote must be a Spark Connect URL sc://HOST[:PORT]"),
    ("sc://host:notaport", "--remote: bad port in"),
    ("sc://:15002", "--remote: no host in"),
    ("host;token=s3cr3t", "--remote must be a Spark Connect URL"),
])
def test_bad_remote_urls_are_one_line_without_secrets(url, message):
    with pytest.raises(ValueError) as e:
        parse_remote(url)
    assert message in str(e.value) and "\n" not in str(e.value)
    assert "s3cr3t" not in str(e.value)


def test_public_url_hides_tokens():
    assert public_url("sc://h:1/;token=s3cr3t;user_id=me") == "sc://h:1/;token=*********;user_id=me"
    assert public_url("sc://h:1") == "sc://h:1"


def test_unreachable_server_is_one_connect_error():
    port = _closed_port()
    with pytest.raises(ConnectError, match=f"cannot reach the Spark Connect server at 127.0.0.1:{port}: "):
        check_reachable(f"sc://127.0.0.1:{port}", timeout_s=2)
    with pytest.raises(ConnectError, match="cannot reach"):
        connect_session(f"sc://127.0.0.1:{port};token=s3cr3t", timeout_s=2)
    assert ConnectError("x").exit_code == 3


def test_reachable_port_passes_the_check():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        check_reachable(f"sc://127.0.0.1:{s.getsockname()[1]}", timeout_s=2)  # no error


def test_a_plain_object_is_not_a_connect_session():
    assert is_connect_session(object()) is False
