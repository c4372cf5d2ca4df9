"""A persistent request cache: no LLM call is paid twice, and interrupted runs resume.

One SQLite file, one table of (key -> JSON value). The key is a sha256 over the backend, the
model fingerprint (file sha256 or endpoint+model), the operation, the prompt and every parameter
that changes the result. SQLite in WAL mode with a busy timeout lets several processes read and
write the same file without corrupting it; writes are single INSERT OR REPLACE statements, each
its own transaction, so a killed process loses at most the request it was making.

A damaged file (cut short, not SQLite at all) is an `InputError` naming it: it holds nothing that
cannot be made again, so deleting it is the fix. An entry that does not read back is ignored with a
warning and the request made again (its new result replaces it).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import threading
import time
import warnings
from pathlib import Path
from typing import Any

from verirag.errors import InputError

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
        with self._damaged_file(), self._conn() as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS requests (key TEXT PRIMARY KEY, op TEXT,"
                " value TEXT NOT NULL, created REAL NOT NULL)"
            )

    @contextlib.contextmanager
    def _damaged_file(self):
        """SQLite's "file is not a database" / "database disk image is malformed" as an InputError
        naming the file. Its subclasses (a lock held too long, a full disk) are not damage: they pass."""
        try:
            yield
        except sqlite3.DatabaseError as e:
            if type(e) is not sqlite3.DatabaseError:
                raise
            raise InputError(
                f"the request cache {self.path} is damaged ({e}); delete it (it only saves repeated LLM "
                "calls, which are made again) or run without it (VERIRAG_NO_CACHE=1)"
            ) from None

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
        with self._damaged_file():
            row = self._conn().execute("SELECT value FROM requests WHERE key=?", (key,)).fetchone()
        value = None if row is None else self._decode(row[0])
        if value is None:
            self.misses += 1
            return None
        self.hits += 1
        return value

    def _decode(self, text: Any) -> Any | None:
        try:
            return json.loads(text)
        except (TypeError, ValueError, RecursionError):
            self.ignore_bad_entry("not JSON")
            return None

    def ignore_bad_entry(self, why: str) -> None:
        """Say that an entry is skipped (and so made again); the caller's `put` replaces it."""
        warnings.warn(f"request cache {self.path}: an entry does not read back ({why}); made again", stacklevel=3)

    def put(self, key: str, value: Any, op: str = "") -> None:
        with self._damaged_file():
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
