"""One way to reach Ray for every `--executor ray` (`verirag eval`, `verirag verify LOG`).

    with ray_session(address, num_cpus=2) as ray:
        ...

The cluster at `address`, else at RAY_ADDRESS, else a local instance started for the session and
stopped after it. A Ray already initialised in this process (a notebook, a test fixture) is used as
it is and left running. Ray is an optional extra (`verirag[ray]`): local runs never import it.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from verirag.errors import InputError

PROBE_SECONDS = 5.0  # ray.init retries an unreachable address for minutes: ask the port first


def import_ray(purpose: str = "--executor ray") -> Any:
    try:
        import ray
    except ImportError:
        raise InputError(f"{purpose} needs Ray, an optional extra: pip install 'verirag[ray]'") from None
    return ray


def _host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of a "host:port" or "ray://host:port" address; None for "auto", "local" and
    anything Ray itself resolves."""
    bare = address.split("://", 1)[1] if "://" in address else address
    host, sep, port = bare.rpartition(":")
    if not sep or not port.isdigit() or not host:
        return None
    return host.strip("[]"), int(port)


def check_reachable(address: str) -> None:
    """InputError when nothing listens at `address` (a clear message now, not minutes of retries)."""
    where = _host_port(address)
    if where is None:
        return
    try:
        socket.create_connection(where, timeout=PROBE_SECONDS).close()
    except OSError as e:
        raise InputError(
            f"cannot reach the Ray cluster at {address} ({e.strerror or type(e).__name__}): start one with "
            "`ray start --head` and pass the address it prints (--ray-address, or RAY_ADDRESS)"
        ) from None


@contextmanager
def ray_session(address: str | None = None, *, num_cpus: int | None = None) -> Iterator[Any]:
    """The `ray` module, connected (module doc). `num_cpus` sizes a local instance only."""
    ray = import_ray()
    if ray.is_initialized():
        yield ray
        return
    address = address or os.environ.get("RAY_ADDRESS") or None
    if address:
        check_reachable(address)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # never phone home, never prompt
    if not address:
        # Ray runs its workers at nice 15: on a busy machine a local run's workers would get a
        # sliver of the CPU the driver gets (measured: a 14-line log took 13 minutes, not 30 s)
        os.environ.setdefault("RAY_worker_niceness", "0")
    # workers see the driver's verirag settings (cache dir, offline mode, model paths)
    env = {k: v for k, v in os.environ.items() if k.startswith(("VERIRAG_", "HF_"))}
    try:
        ray.init(
            address=address,
            num_cpus=None if address else num_cpus,  # a running cluster has its own resources
            include_dashboard=False,
            log_to_driver=False,
            ignore_reinit_error=True,
            runtime_env={"env_vars": env} if env else None,
        )
    except (ConnectionError, ValueError, RuntimeError) as e:
        raise InputError(f"cannot start or join Ray at {address or 'a local instance'}: {e}") from None
    try:
        yield ray
    finally:
        ray.shutdown()
