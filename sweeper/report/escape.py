"""Safe Markdown pieces: escaped text, code spans, tables, collapsible blocks, numbers.

Model ids, error messages and graph-break reasons come from outside; whatever they hold
(``|``, backticks, HTML, newlines, control characters) must render as the literal text
inside one table cell and never as markup.
"""

from __future__ import annotations

import functools
import math
import os
import re
from collections.abc import Iterable, Sequence
from urllib.parse import quote

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u2028\u2029]|\x1b\[[0-9;]*[A-Za-z]")
_SPACES = re.compile(r"\s+")
# Characters that start inline markup anywhere in a line (block markers cannot start
# inside a cell or after our own prefixes, so they need no escape).
_MARKUP = re.compile(r"([\\`*_\[\]|~$])")
_NEEDS_ESCAPE = re.compile(r"[\\`*_\[\]|~$<>&]")
_CODE_SPECIAL = re.compile(r"[`|<>]")
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


def one_line(text: object, limit: int | None = None) -> str:
    """Text on one line: control characters dropped, whitespace runs folded, truncated."""
    s = "" if text is None else str(text)
    # Fast path for the usual clean one-liner: most cells of a 100,000-row table.
    if not (s.isprintable() and "  " not in s and s == s.strip()):
        s = _SPACES.sub(" ", _CONTROL.sub("", s)).strip()
    if limit is not None and len(s) > limit:
        s = s[: limit - 1].rstrip() + "…"
    return s


def md(text: object, limit: int | None = None) -> str:
    """Escape text so it renders literally in Markdown (also inside a table cell)."""
    s = one_line(text, limit)
    if _NEEDS_ESCAPE.search(s) is None:
        return s
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MARKUP.sub(r"\\\1", s)


def code(text: object, limit: int | None = None) -> str:
    """A code span holding the text literally, safe inside a table cell."""
    s = one_line(text, limit)
    if not s:
        return ""
    if _CODE_SPECIAL.search(s) is None:  # the usual case: nothing to fence or escape
        return f"`{s}`"
    if "<" in s or ">" in s:
        # Literal in a code span per CommonMark, but not every renderer agrees: use an
        # HTML code element around fully escaped text so no tag ever reaches the page.
        return f"<code>{md(s)}</code>"
    longest = max((len(run) for run in re.findall(r"`+", s)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    # GFM splits table cells on | before reading code spans; \| keeps it in the span.
    return f"{fence}{pad}{s.replace('|', chr(92) + '|')}{pad}{fence}"


def hub_url() -> str:
    """The Hub that model ids link to: ``HF_ENDPOINT`` (a mirror) when set, with any
    user:password part removed, else huggingface.co."""
    return _hub_url(os.environ.get("HF_ENDPOINT") or "")


@functools.lru_cache(maxsize=8)
def _hub_url(_env: str) -> str:
    from sweeper.hub.access import shown_endpoint

    url = shown_endpoint().rstrip("/")
    # Only a plain http(s) URL goes into a link; anything else falls back to the Hub.
    return url if re.match(r"^https?://[^\s()<>\[\]\\\"']+$", url) else "https://huggingface.co"


def model_link(model_id: str, *, link: bool = True) -> str:
    """The model id, linked to its page on the Hub (``hub_url``) when it looks like a Hub repo id."""
    text = md(model_id)
    if link and _HUB_ID.match(model_id or ""):
        target = model_id if model_id.isascii() else quote(model_id, safe="/")  # ASCII ids that match are URL-safe
        return f"[{text}]({hub_url()}/{target})"
    return text


def table(headers: Sequence[str], rows: Iterable[Sequence[object]], align: str = "") -> str:
    """A GFM table; cells are used as given (escape them first). ``align`` holds one
    letter per column: l or r (default l)."""
    marks = {"l": "---", "r": "--:"}
    lines = [
        "| " + " | ".join(headers) + " |",
        "| " + " | ".join(marks[(align[i] if i < len(align) else "l")] for i in range(len(headers))) + " |",
    ]
    lines.extend("| " + " | ".join(str(c) for c in row) + " |" for row in rows)
    return "\n".join(lines)


def details(summary: str, body: str) -> str:
    """A collapsible block (GitHub renders Markdown inside after a blank line)."""
    return f"<details>\n<summary>{summary}</summary>\n\n{body}\n\n</details>"


def num(value: object) -> str:
    """An integer with thousands separators; an em dash when unknown."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    try:
        return f"{int(value):,}"
    except (TypeError, ValueError):
        return "—"


def pct(value: float | None, digits: int = 1) -> str:
    """A share as a percentage; an em dash when undefined."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{100 * value:.{digits}f}%"


def compact(value: object) -> str:
    """A large count in short form: 1.2M, 35.4k."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    try:
        n = int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):  # pandas' NA for an unknown count
        return "—"
    for size, unit in ((1_000_000_000, "B"), (1_000_000, "M"), (1_000, "k")):
        if abs(n) >= size:
            return f"{n / size:.1f}{unit}"
    return str(n)


def seconds(value: object) -> str:
    """A duration as h/m/s."""
    if value is None:
        return "—"
    s = float(value)  # type: ignore[arg-type]
    if s < 60:
        return f"{s:.1f} s"
    m, s = divmod(round(s), 60)
    h, m = divmod(m, 60)
    return f"{h} h {m:02d} min" if h else f"{m} min {s:02d} s"
