"""MonetDB-only behaviour: what a misconfigured server tells the user."""
from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time

import pytest

import tique


def test_server_without_embedded_c_gets_a_clear_error() -> None:
    binary = shutil.which("mserver5")
    if binary is None:
        pytest.skip("MonetDB tests skipped: no `mserver5` on PATH")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    farm = tempfile.mkdtemp(prefix="tique-monetdb-noc-")
    server = subprocess.Popen([binary, f"--dbpath={farm}/db", "--set", f"mapi_port={port}", "--set", "mapi_listenaddr=127.0.0.1"],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"monetdb://monetdb:monetdb@127.0.0.1:{port}/db"
        deadline = time.monotonic() + 60
        while True:
            try:
                conn = tique.connect(url)
                conn.close()
                pytest.fail("connected although the server cannot run C UDFs")
            except tique.OperationalError as error:
                if "embedded_c=true" in str(error):
                    assert "mserver5 --set embedded_c=true" in str(error)
                    break
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)  # still starting
    finally:
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(farm, ignore_errors=True)
