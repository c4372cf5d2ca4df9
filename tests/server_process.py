"""Start `verirag serve` as a real subprocess on loopback (tests and benchmarks share this)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from verirag.client import VeriragClient
from verirag.errors import BackendError

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    proc: subprocess.Popen
    url: str
    log: Path

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


def start_server(
    tmp: Path, *args: str, cache_dir: Path | None = None, ready_timeout: float = 180, env: dict | None = None
) -> Server:
    port = free_port()
    log = tmp / f"server-{port}.log"
    environ = {
        **os.environ,
        "PYTHONPATH": str(REPO / "src"),
        "VERIRAG_OFFLINE": "1",
        "HF_HUB_OFFLINE": "1",
        **({"VERIRAG_CACHE_DIR": str(cache_dir)} if cache_dir else {}),
        **(env or {}),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "verirag", "serve", "--port", str(port), *args],
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=environ,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + ready_timeout
    with VeriragClient(url, timeout=2) as client:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the server exited ({proc.returncode}):\n{log.read_text()[-3000:]}")
            try:
                client.health()
                return Server(proc, url, log)
            except BackendError:  # not listening yet, or the models are still loading (503)
                pass
            if time.time() > deadline:
                proc.kill()
                raise RuntimeError(f"the server was not ready in {ready_timeout} s:\n{log.read_text()[-3000:]}")
            time.sleep(0.3)
