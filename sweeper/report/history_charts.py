"""PNG charts of a history (matplotlib, Agg): coverage and pass rate per night, the lowering
plan's items per night, outcome changes per night.

As the report's charts, written without timestamps or version metadata so that the same
records give the same bytes on the same installation.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display: histories are built in jobs and tests

import matplotlib.pyplot as plt
from matplotlib.ticker import FuncFormatter

from sweeper.report.escape import compact
from sweeper.report.history import History

# A chart's role in history.md -> its file name.
NAMES = {"trend": "history_coverage.png", "items": "history_plan_items.png", "changes": "history_changes.png"}


def write_history_charts(h: History, folder: Path) -> dict[str, str]:
    """Draw every chart the history allows into ``folder``; return role -> file name."""
    folder.mkdir(parents=True, exist_ok=True)
    written = {}
    for role, draw in (("trend", _trend), ("items", _items), ("changes", _changes)):
        name = NAMES[role]
        fig = draw(h)
        if fig is None:
            (folder / name).unlink(missing_ok=True)
            continue
        fig.savefig(folder / name, dpi=100, metadata={"Software": None})
        plt.close(fig)
        written[role] = name
    return written


def _x(h: History) -> list[str]:
    return [label.replace("$", r"\$") for label in h.labels]


def _trend(h: History) -> plt.Figure | None:
    f = h.figures
    if f.empty:
        return None
    fig, ax = plt.subplots(figsize=(8, 4))
    for column, label, color in (("coverage", "end-to-end coverage", "#1565c0"), ("pass_rate", "device pass rate", "#2e7d32")):
        values = [None if v is None else 100 * v for v in f[column].tolist()]
        ax.plot(_x(h), values, marker="o", color=color, label=label)
    ax.set_ylim(0, 100)
    ax.set_ylabel(f"% over the {len(h.common):,} models in every night")
    ax.set_title("Coverage and device pass rate per night")
    ax.legend(loc="lower left", fontsize=8)
    ax.tick_params(axis="x", labelrotation=30)
    fig.tight_layout()
    return fig


def _items(h: History) -> plt.Figure | None:
    if h.items.empty:
        return None
    fig, ax = plt.subplots(figsize=(8, 4))
    for _, row in h.items.iterrows():
        name = str(row["item"])[:40].replace("$", r"\$")
        ax.plot(_x(h), [row[label] for label in h.labels], marker="o", label=name)
    ax.set_ylabel("downloads blocked" if h.weighted else "models blocked")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: compact(v)))
    ax.set_ylim(bottom=0)
    ax.set_title("Lowering-plan items: what each blocks per night")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
    ax.tick_params(axis="x", labelrotation=30)
    fig.tight_layout()
    return fig


def _changes(h: History) -> plt.Figure | None:
    pairs = [(n.label, c) for n, c in zip(h.nights, h.changes) if c is not None]
    if not pairs:
        return None
    labels = [p[0].replace("$", r"\$") for p in pairs]
    fixed = [len(c.fixed) for _, c in pairs]
    regressed = [-len(c.regressed) for _, c in pairs]
    fig, ax = plt.subplots(figsize=(8, 3.5))
    ax.bar(labels, fixed, color="#2e7d32", label="fixed")
    ax.bar(labels, regressed, color="#c62828", label="regressed")
    ax.axhline(0, color="#616161", linewidth=0.8)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: str(abs(int(v)))))
    ax.set_ylabel("models")
    ax.set_title("Fixed and regressed models per night (since the night before)")
    ax.legend(loc="upper left", fontsize=8)
    ax.tick_params(axis="x", labelrotation=30)
    fig.tight_layout()
    return fig
