"""A throwaway MonetDB server for the tests: `mserver5` from PATH in a temp dbfarm, or
the server named by TIQUE_MONETDB_URL. Without either, MonetDB tests skip."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

SKIP_REASON = ("MonetDB tests skipped: no `mserver5` on PATH and TIQUE_MONETDB_URL is unset "
               "(install MonetDB from MonetDB's own packages, see README)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class MonetDBServer:
    """`url` is the base monetdb:// URL; each test gets its own schema on it."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None
        self.dir: Path | None = None
        configured = os.environ.get("TIQUE_MONETDB_URL")
        if configured:
            self.url = configured
            return
        binary = shutil.which("mserver5")
        if binary is None:
            raise FileNotFoundError(SKIP_REASON)
        self.binary = binary
        self.dir = Path(tempfile.mkdtemp(prefix="tique-monetdb-"))
        self.port = _free_port()
        self.url = f"monetdb://monetdb:monetdb@127.0.0.1:{self.port}/db"
        self.start()

    def start(self) -> None:
        assert self.dir is not None
        log = open(self.dir / "mserver5.log", "ab")
        self.process = subprocess.Popen(
            [self.binary, f"--dbpath={self.dir / 'db'}", "--set", "embedded_c=true",
             "--set", f"mapi_port={self.port}", "--set", "mapi_listenaddr=127.0.0.1"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        deadline = time.monotonic() + 60
        import pymonetdb
        while True:
            try:
                # probe the port first: pymonetdb logs every refused connection as an error
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                pymonetdb.connect(username="monetdb", password="monetdb", hostname="127.0.0.1",
                                  port=self.port, database="db").close()
                return
            except Exception:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"mserver5 did not start: {(self.dir / 'mserver5.log').read_text()[-2000:]}")
                time.sleep(0.2)

    def restart(self) -> None:
        """Kills the server (SIGKILL, a crash) and starts it again on the same dbfarm."""
        if self.process is None:
            raise RuntimeError("cannot restart a server given by TIQUE_MONETDB_URL")
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)
        self.start()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
