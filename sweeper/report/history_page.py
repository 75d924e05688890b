"""history.html: the history as one self-contained page beside the lookup page (index.html).

Plain HTML (no script, no network): every value from records is escaped with
``html.escape``; the charts are the PNGs beside it.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from sweeper.report.escape import num, pct
from sweeper.report.history import History
from sweeper.report.history_flaky import flake_rates

STYLE = (
    "body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:1100px;padding:0 1rem;color:#212121}"
    "table{border-collapse:collapse;margin:.5rem 0 1.5rem}th,td{border:1px solid #ddd;padding:.25rem .5rem;"
    "text-align:left;vertical-align:top}td.n{text-align:right}th{background:#f5f5f5}img{max-width:100%}"
    ".regressed{color:#c62828}.fixed{color:#2e7d32}code{font-size:90%}"
)


def _e(value: object) -> str:
    return html.escape("" if value is None else str(value))


def _table(headers: Sequence[str], rows: Sequence[Sequence[object]], numeric: set[int] = frozenset()) -> str:  # type: ignore[assignment]
    """An HTML table of escaped cells; columns in ``numeric`` align right."""
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td{' class=n' if i in numeric else ''}>{_e(c)}</td>" for i, c in enumerate(row)) + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render_history_page(h: History, *, charts: dict[str, str], lookup: str | None) -> str:
    """The whole history.html; ``charts`` maps a role to its path relative to the page,
    ``lookup`` is the newest night's index.html relative to it (None when there is none)."""
    parts = ["<h1>Sweep history</h1>"]
    if lookup:
        parts.append(f'<p>Every model of the newest night: <a href="{_e(lookup)}">the lookup page</a>.</p>')
    parts.append(f"<p>{num(len(h.nights))} nights; trends over the {num(len(h.common))} models present in every night.</p>")
    parts.append("<h2>Coverage and device pass rate per night</h2>")
    rows = [[r.night, r.date, num(r.models), num(r.added), num(r.gone), num(r.common), num(r.passing), num(r.tried),
             pct(r.pass_rate), pct(r.coverage)] for r in h.figures.itertuples(index=False)]  # fmt: skip
    parts.append(_table(["night", "date", "models", "added", "gone", "same models", "passing", "device verdicts",
                         "device pass rate", "end-to-end coverage"], rows, set(range(2, 10))))  # fmt: skip
    parts += [_img(charts, "trend"), _img(charts, "changes"), "<h2>Lowering-plan items per night</h2>"]
    if not h.items.empty:
        rows = [[r["item"], *[num(r[label]) for label in h.labels]] for _, r in h.items.iterrows()]
        parts.append(_table(["item", *h.labels], rows, set(range(1, len(h.labels) + 1))))
    parts.append(_img(charts, "items"))
    parts.append("<h2>What changed each night</h2>")
    parts += _changes(h)
    parts.append("<h2>Blockers: first and last night seen</h2>")
    rows = [[r.blocker, r.first, r.last, num(r.nights), num(r.models_now), "open" if r.open else "gone"]
            for r in h.blockers.itertuples(index=False)]
    parts.append(_table(["blocker", "first seen", "last seen", "nights", "models now", "state"], rows, {3, 4}))
    parts.append("<h2>Flaky verdicts</h2>")
    rows = [[r.night, r.model_id, r.before, r.after] for r in h.flips.itertuples(index=False)]
    parts.append(_table(["night", "model (same fingerprint)", "before", "after"], rows))
    rates = flake_rates(h.rechecks, h.labels)
    rows = [[r.night, num(r.rechecked), num(r.flaky), pct(r.rate)] for r in rates.itertuples(index=False)]
    parts.append(_table(["night", "rechecked", "not reproduced", "flake rate"], rows, {1, 2, 3}))
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src 'self'; "
        "style-src 'unsafe-inline'\">\n<title>Sweep history</title>\n"
        f"<style>{STYLE}</style>\n</head>\n<body>\n" + "\n".join(p for p in parts if p) + "\n</body>\n</html>\n"
    )


def _img(charts: dict[str, str], role: str) -> str:
    path = charts.get(role)
    return f'<p><img src="{_e(path)}" alt="{_e(role)}"></p>' if path else ""


def _changes(h: History) -> list[str]:
    out = []
    for before, night, result in zip(h.nights, h.nights[1:], h.changes[1:]):
        assert result is not None
        out.append(f"<h3>{_e(night.label)} <small>(since {_e(before.label)})</small></h3>")
        rows = []
        for change, frame in (("regressed", result.regressed), ("fixed", result.fixed),
                              ("unavailable", result.unavailable), ("other reason", result.changed)):  # fmt: skip
            for r in frame.itertuples(index=False):
                why = getattr(r, "why", "") or "—"
                reason = " ".join(str(x) for x in (r.reason_kind_new, r.reason_op_new) if isinstance(x, str) and x)
                rows.append([change, r.model_id_new, r.category_old, r.category_new, reason,
                             "same check, new verdict" if why == "same check" else why])
        out.append(_table(["change", "model", "before", "after", "reason now", "why"], rows) if rows
                   else "<p>No outcome changed.</p>")
    return out
