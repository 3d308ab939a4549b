"""A tique client that kills itself (SIGKILL) at a chosen point of its commit.

Run as a separate process by the recovery tests: it updates `kv`, then commits, and
its engine statements are watched so the process dies right before or right after the
commit marker (the tq_outcome insert), or after writing without committing at all.
"""
from __future__ import annotations

import os
import re
import signal
import sys

import tique

COMMIT_MARKER = re.compile(r'\s*INSERT\s+INTO\s+"?tq_outcome"?', re.IGNORECASE)


def main(url: str, point: str, key: int, value: str) -> None:
    conn = tique.connect(url)
    backend = conn.backend
    original = backend.execute

    def execute(raw, sql, params, *rest):  # type: ignore[no-untyped-def]
        marker = COMMIT_MARKER.match(sql) is not None
        if marker and point == "before-marker":
            os.kill(os.getpid(), signal.SIGKILL)
        result = original(raw, sql, params, *rest)
        if marker and point == "after-marker":
            os.kill(os.getpid(), signal.SIGKILL)
        return result

    original_all = backend.execute_all

    def execute_all(raw, statements, **options):  # type: ignore[no-untyped-def]  # one pipelined request
        marker = any(COMMIT_MARKER.match(sql) is not None for sql, _ in statements)
        if marker and point == "before-marker":
            os.kill(os.getpid(), signal.SIGKILL)
        result = original_all(raw, statements, **options)
        if marker and point == "after-marker":
            os.kill(os.getpid(), signal.SIGKILL)
        return result

    original_request = backend.request

    def request(raw, statements, *args, **options):  # type: ignore[no-untyped-def]  # several statements in one request (MonetDB)
        marker = any(COMMIT_MARKER.match(str(sql)) is not None for sql, _ in statements)
        if marker and point == "before-marker":
            os.kill(os.getpid(), signal.SIGKILL)
        result = original_request(raw, statements, *args, **options)
        if marker and point == "after-marker":
            os.kill(os.getpid(), signal.SIGKILL)
        return result

    original_then = getattr(backend, "commit_then", None)

    def commit_then(raw, first, then):  # type: ignore[no-untyped-def]  # the marker committed, then publish, in one request (PostgreSQL)
        marker = COMMIT_MARKER.match(first[0]) is not None
        if marker and point == "before-marker":
            os.kill(os.getpid(), signal.SIGKILL)
        result = original_then(raw, first, then)
        if marker and point == "after-marker":
            os.kill(os.getpid(), signal.SIGKILL)
        return result

    if original_then is not None:
        backend.commit_then = commit_then  # type: ignore[method-assign]

    original_whole = getattr(backend, "commit_whole", None)

    def commit_whole(raw, writes, marker, then):  # type: ignore[no-untyped-def]  # writes, marker and publish in one request (PostgreSQL)
        result = original_whole(raw, writes, marker, then)
        if point == "after-marker":
            os.kill(os.getpid(), signal.SIGKILL)
        return result

    if original_whole is not None:
        backend.commit_whole = commit_whole  # type: ignore[method-assign]
    if point == "before-marker" and getattr(backend, "commits_whole", False):
        # A whole commit sends writes and marker in one request, so no client can die
        # between them; the state "writes committed, no marker" still arises on the
        # commit path that sends them apart (SERIALIZABLE, FOR SHARE), which this point
        # exercises, so that recovery is tested for it.
        backend.commits_whole = False  # type: ignore[attr-defined]
    backend.execute = execute  # type: ignore[method-assign]
    backend.execute_all = execute_all  # type: ignore[method-assign]
    backend.request = request  # type: ignore[method-assign]
    cur = conn.cursor()
    cur.execute("UPDATE kv SET v = ? WHERE k = ?", (value, key))
    if point == "before-commit":
        os.kill(os.getpid(), signal.SIGKILL)
    conn.commit()
    raise SystemExit("unreachable: the process should have been killed")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])
