"""No error, log line, command-line message or result file shows a password, and a
DuckDB file another process holds is an OperationalError that says why."""
from __future__ import annotations

import json
import logging
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

import tique
from bench.results import Result, write
from tique.backends import forget_database
from tique.cli import main

SECRET = "s3cretpw"


def _closed_port() -> int:
    """A local port nothing listens on: connecting there is refused at once."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _with_password(url: str, password: str) -> str:
    parts = urlsplit(url)
    user = parts.username or "monetdb"
    return urlunsplit(parts._replace(netloc=f"{user}:{password}@{parts.hostname}:{parts.port}"))


def _refused_urls() -> list[str]:
    port = _closed_port()
    return [f"postgresql://alice:{SECRET}@127.0.0.1:{port}/db", f"monetdb://alice:{SECRET}@127.0.0.1:{port}/db"]


@pytest.mark.parametrize("scheme", ["postgresql", "monetdb"])
def test_refused_connect_hides_the_password(scheme: str, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]) -> None:
    url = next(u for u in _refused_urls() if u.startswith(scheme))
    with caplog.at_level(logging.DEBUG), pytest.raises(tique.OperationalError) as raised:
        tique.connect(url)
    message = str(raised.value)
    assert SECRET not in message, message
    assert f"connect to {scheme}://alice:***@127.0.0.1:" in message, message
    # One message, not the driver's log line run into ours.
    assert not [r for r in caplog.records if "Could not connect" in r.getMessage()]
    out, err = capfd.readouterr()
    assert SECRET not in out + err and "Could not connect" not in err


def test_server_rejecting_the_connect_hides_the_password(url: str, engine: str) -> None:
    """A reachable server that refuses the database or the credentials."""
    if engine == "duckdb":
        pytest.skip("DuckDB URLs carry no credentials")
    wrong = _with_password(url, SECRET)
    if engine == "postgres":  # the throwaway cluster trusts every password: name a missing database
        wrong = urlunsplit(urlsplit(wrong)._replace(path="/no_such_db"))
    with pytest.raises(tique.Error) as raised:
        tique.connect(wrong)
    assert SECRET not in str(raised.value), str(raised.value)
    assert ":***@" in str(raised.value)


def test_command_line_hides_the_password(capsys: pytest.CaptureFixture[str]) -> None:
    for url in _refused_urls():
        for argv in (["checkpoint", url], ["recover", url], ["adopt", url, "t"]):
            assert main(argv) == 1
            err = capsys.readouterr().err
            assert SECRET not in err and ":***@" in err, err


def test_unknown_scheme_hides_the_password() -> None:
    with pytest.raises(tique.InterfaceError) as raised:
        tique.connect(f"mysql://alice:{SECRET}@127.0.0.1/db")
    assert SECRET not in str(raised.value)


def test_result_files_hide_passwords(tmp_path: Path) -> None:
    result = Result("tpcc", "tique-postgres", "16", {
        "url": f"postgresql://alice:{SECRET}@db.example:5432/tpcc",
        "urls": {"tique-monetdb": f"monetdb://monetdb:{SECRET}@127.0.0.1:50000/demo?schema=x"},
        "encoded": "postgresql://alice:s%40cret@h/db",
    }, metrics={"error": f"could not connect to postgresql://alice:{SECRET}@db.example/tpcc"})
    text = write(result, tmp_path / "r.json").read_text()
    assert SECRET not in text and "s%40cret" not in text
    written = json.loads(text)
    assert written["parameters"]["url"] == "postgresql://alice:***@db.example:5432/tpcc"
    assert written["parameters"]["urls"]["tique-monetdb"] == "monetdb://monetdb:***@127.0.0.1:50000/demo?schema=x"


HOLDER = textwrap.dedent("""
    import sys, duckdb
    held = duckdb.connect(sys.argv[1])
    print("holding", flush=True)
    sys.stdin.read()  # until the test closes our stdin
""")


def test_duckdb_file_held_by_another_process(tmp_path: Path) -> None:
    path = tmp_path / "held.db"
    holder: subprocess.Popen[Any] = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)],
                                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        with pytest.raises(tique.OperationalError) as raised:
            tique.connect(f"duckdb:///{path}")
        message = str(raised.value)
        assert "DuckDB allows one process per database file" in message, message
        assert str(path) in message and f"PID {holder.pid}" in message, message
        assert "IOException" not in message
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait()
    # Once the other process is gone the file opens.
    conn = tique.connect(f"duckdb:///{path}")
    conn.close()
    forget_database(f"duckdb:///{path}")
