"""Write a :class:`~benchsel.report.build.Report` as one self-contained HTML page.

The page loads nothing: figures are inline PNG (``data:`` URIs), the style is
inline, and a Content-Security-Policy forbids every other source and every
script, so a name from the user's data can neither fetch nor run anything. Every
such name is escaped as well; it appears as text. The JSON behind the tables is
embedded as a non-executed ``application/json`` block for other tools.
"""

from __future__ import annotations

import base64
import datetime
import json
import math
import re
from html import escape as _escape_html

from . import figures

#: Control characters no HTML text may hold (NUL among them); tab and newline stay.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def escape(text: str, quote: bool = True) -> str:
    """``html.escape`` of ``text`` with its control characters removed: a name holding
    NUL or an escape sequence is shown as its printable characters."""
    return _escape_html(_CONTROL.sub("", text), quote)

__all__ = ["render"]

_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"

_STYLE = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #222;
       max-width: 1000px; margin: 0 auto; padding: 1em 1.5em 4em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { border-bottom: 1px solid #ddd; padding-bottom: 0.2em; margin-top: 2em; }
nav a { margin-right: 1em; }
.meta { color: #666; }
.skipped { background: #fff4e5; border-left: 4px solid #f0a030; padding: 0.5em 1em; }
.notes { color: #8a5a00; font-size: 0.9em; }
figure { margin: 1em 0; }
figure img { max-width: 100%; height: auto; }
.scroll { max-height: 28em; overflow: auto; border: 1px solid #eee; }
table { border-collapse: collapse; font-size: 0.9em; }
caption { text-align: left; color: #666; padding: 0.3em 0; }
th, td { padding: 0.2em 0.6em; text-align: left; border-bottom: 1px solid #eee; }
th { position: sticky; top: 0; background: #f7f7f7; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
"""


def _cell(value) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return '<td class="num">-</td>'
    if isinstance(value, bool):
        return f"<td>{'yes' if value else 'no'}</td>"
    if isinstance(value, (int, float)):
        return f'<td class="num">{value:.4g}</td>' if isinstance(value, float) \
            else f'<td class="num">{value}</td>'
    return f"<td>{escape(str(value))}</td>"


def _table(table) -> str:
    head = "".join(f"<th>{escape(str(h))}</th>" for h in table.headers)
    body = "\n".join("<tr>" + "".join(_cell(v) for v in row) + "</tr>" for row in table.rows)
    caption = f"<caption>{escape(table.caption)}</caption>" if table.caption else ""
    return (f'<div class="scroll"><table>{caption}<thead><tr>{head}</tr></thead>'
            f"<tbody>\n{body}\n</tbody></table></div>")


def _figure(name: str, fig) -> str:
    data = base64.b64encode(figures.encode(fig, "png")).decode("ascii")
    return (f'<figure><img id="fig-{escape(name)}" alt="{escape(name)}" '
            f'src="data:image/png;base64,{data}"></figure>')


def _finite(value):
    """JSON-safe copy: NaN and infinities become null (strict JSON has neither)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return _finite(value.tolist())
    return value


def _json_block(payload: dict) -> str:
    text = json.dumps(_finite(payload), allow_nan=False)
    # "<" can never close the block, whatever a name contains.
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return f'<script type="application/json" id="benchsel-data">{text}</script>'


def render(report) -> str:
    """The report as an HTML document (a string)."""
    parts = []
    nav = " ".join(f'<a href="#{s.key}">{escape(s.title)}</a>' for s in report.sections)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    with figures.style():
        for s in report.sections:
            parts.append(f'<section id="{s.key}"><h2>{escape(s.title)}</h2>')
            if s.skipped:
                parts.append(f'<p class="skipped">Not available for this leaderboard: '
                             f"{escape(s.skipped)}</p>")
            parts += [f"<p>{escape(p)}</p>" for p in s.text]
            parts += [_figure(name, report.figures[name]) for name in s.figures]
            parts += [_table(t) for t in s.tables]
            if s.notes:
                parts.append('<ul class="notes">' + "".join(
                    f"<li>warning: {escape(n)}</li>" for n in s.notes) + "</ul>")
            parts.append("</section>")
    body = "\n".join(parts)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{_CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(report.title)}</title>
<style>{_STYLE}</style>
</head>
<body>
<header>
<h1>{escape(report.title)}</h1>
<p class="meta">benchsel {escape(str(report.payload.get("benchsel", "")))}, {stamp},
computed in {report.seconds:.1f} s</p>
<nav>{nav}</nav>
</header>
{body}
{_json_block(report.payload)}
</body>
</html>
"""
