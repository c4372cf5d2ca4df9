"""The one HTML page writer of every report (`verirag verify`'s log report, the AwF grid's, the
dependable and CalibRAG studies'): a self-contained page (inline CSS, figures as base64 data URIs, no
external URL), and `to_png`, which renders a matplotlib figure on the Agg canvas (pyplot is never
imported, so no window opens and no global backend is changed)."""

from __future__ import annotations

import base64
import html
import io
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

REPORT_FILE = "report.html"
DPI = 110

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em auto;
max-width:1200px;padding:0 1em;color:#222;line-height:1.4}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
h3{font-size:1.05em}
table.t{border-collapse:collapse;font-size:.82em;margin:.5em 0}
table.t th,table.t td{border-bottom:1px solid #e3e3e3;padding:.25em .6em;text-align:left}
table.t th{border-bottom:2px solid #555;background:#f6f6f6}
table.t td.n{text-align:right;white-space:nowrap}
table.t tr.sec td{font-style:italic;background:#fafafa;font-weight:600}
.ci{color:#777;font-size:.85em}.cap{color:#555;font-size:.85em;max-width:60em}
.warn{background:#fff6e0;border-left:4px solid #e0a000;padding:.4em .8em}
figure{margin:1em 0}figure img{max-width:100%;border:1px solid #eee}
figcaption{color:#555;font-size:.85em}
code{background:#f3f3f3;padding:0 .2em}
"""


def num(v: Any, digits: int = 3) -> str:
    """A cell as text: floats with `digits` decimals, missing or NaN as an en dash."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return f"{v:.{digits}f}" if isinstance(v, float) else str(v)


def html_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain table (the studies'; the grid's tables render themselves, `tables.Table.to_html`)."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f'<td class="n">{html.escape(num(c))}</td>' for c in r) + "</tr>" for r in rows)
    return f'<table class="t"><tr>{head}</tr>{body}</table>'


def to_png(fig: Figure) -> bytes:
    """The figure as PNG bytes at `DPI`."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # only pages with figures pay for it

    buf = io.BytesIO()
    FigureCanvasAgg(fig)
    fig.savefig(buf, format="png", dpi=DPI)
    return buf.getvalue()


def save_figure(fig_dir: Path, file_name: str, caption: str, png: bytes) -> str:
    """Write the PNG to `fig_dir`/`file_name` and return it as an inline figure of the page."""
    fig_dir.mkdir(exist_ok=True)
    (fig_dir / file_name).write_bytes(png)
    data = base64.b64encode(png).decode("ascii")
    return (
        f'<figure><img alt="{html.escape(caption)}" src="data:image/png;base64,{data}">'
        f"<figcaption>{html.escape(caption)} ({html.escape(file_name)})</figcaption></figure>"
    )


def write_page(path: str | Path, title: str, parts: Sequence[str]) -> Path:
    """Write the page `title` with body `parts` (HTML) to `path`."""
    path = Path(path)
    page = [
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{CSS}</style></head><body>",
        *parts,
        "</body></html>\n",
    ]
    path.write_text("\n".join(page), encoding="utf-8")
    return path
