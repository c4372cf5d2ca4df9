"""A persistent request cache: no LLM call is paid twice, and interrupted runs resume.

One SQLite file, one table of (key -> JSON value). The key is a sha256 over the backend, the
model fingerprint (file sha256 or endpoint+model), the operation, the prompt and every parameter
that changes the result. SQLite in WAL mode with a busy timeout lets several processes read and
write the same file without corrupting it; writes are single INSERT OR REPLACE statements, each
its own transaction, so a killed process loses at most the request it was making.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1


def default_cache_path() -> Path:
    from verirag.settings import settings

    return settings().cache_dir / "requests.sqlite"


def request_key(**parts: Any) -> str:
    """Stable key over JSON-serialisable parts (sorted keys, no whitespace variance)."""
    blob = json.dumps({"v": SCHEMA_VERSION, **parts}, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class RequestCache:
    """Key-value store of LLM results. Thread-safe; process-safe through SQLite locking."""

    def __init__(self, path: str | os.PathLike[str] | None = None):
        self.path = Path(path) if path is not None else default_cache_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self.hits = 0
        self.misses = 0
        with self._conn() as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS requests (key TEXT PRIMARY KEY, op TEXT,"
                " value TEXT NOT NULL, created REAL NOT NULL)"
            )

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            # isolation_level=None: autocommit; each statement is its own transaction.
            conn = sqlite3.connect(self.path, timeout=60.0, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA busy_timeout=60000")
            self._local.conn = conn
        return conn

    def get(self, key: str) -> Any | None:
        row = self._conn().execute("SELECT value FROM requests WHERE key=?", (key,)).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return json.loads(row[0])

    def put(self, key: str, value: Any, op: str = "") -> None:
        self._conn().execute(
            "INSERT OR REPLACE INTO requests (key, op, value, created) VALUES (?, ?, ?, ?)",
            (key, op, json.dumps(value, ensure_ascii=False), time.time()),
        )

    def __len__(self) -> int:
        return int(self._conn().execute("SELECT COUNT(*) FROM requests").fetchone()[0])

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
