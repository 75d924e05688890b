"""PNG charts (matplotlib, Agg): pass rate by stage, downloads covered vs rank, and the
plan's steps (top_blockers.png: "Fix next", the downloads each step of the report's plan
frees, in plan order).

Charts are written without timestamps or version metadata so that the same records give
the same bytes on the same installation.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display: reports are built in jobs and tests

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import FuncFormatter

from sweeper.report.aggregate import STAGE_STATUSES, weight
from sweeper.report.analysis import Analysis
from sweeper.report.escape import compact, one_line
from sweeper.report.page_data import fix_next_title

COLORS = {"pass": "#2e7d32", "fail": "#c62828", "crash": "#6a1b9a", "timeout": "#ef6c00", "oom": "#ad1457",
          "blocked": "#9e9e9e", "skip": "#f9a825", "not recorded": "#e0e0e0"}  # fmt: skip
TOP_BLOCKERS = 15  # plan steps drawn, at most
LABEL_CHARS = 60  # a step's label, shortened to this many characters


def write_charts(a: Analysis, folder: Path) -> list[str]:
    """Draw every chart the data allows; return the file names written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, draw in (
        ("pass_rate_by_stage.png", _stages),
        ("coverage_vs_rank.png", _coverage),
        ("top_blockers.png", _blockers),
    ):
        fig = draw(a)
        if fig is None:
            (folder / name).unlink(missing_ok=True)
            continue
        fig.savefig(folder / name, dpi=100, metadata={"Software": None})
        plt.close(fig)
        written.append(name)
    return written


def _stages(a: Analysis) -> plt.Figure | None:
    s = a.stages
    tested = a.overview["reached_device"]
    if s.empty or not tested:
        return None
    fig, ax = plt.subplots(figsize=(8, 4))
    left = np.zeros(len(s))
    for status in (*STAGE_STATUSES, "not recorded"):
        share = s[status].to_numpy(dtype=float) / tested * 100
        ax.barh(s["stage"], share, left=left, color=COLORS[status], label=status)
        left += share
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel(f"% of {tested:,} models that reached the device")
    ax.set_title("Outcome by stage")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=5, fontsize=8, frameon=False)
    fig.tight_layout()
    return fig


def _coverage(a: Analysis) -> plt.Figure | None:
    m = a.data.models
    if m.empty:
        return None
    w = weight(m).to_numpy(dtype=float) if a.weighted else np.ones(len(m))
    passed = (m["category"] == "pass").to_numpy()
    total = w.sum() or 1.0
    # At most ~2,000 log-spaced points: the curve looks the same and draws fast at 100,000.
    idx = np.unique(np.geomspace(1, len(m), num=min(len(m), 2000)).astype(int)) - 1
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.plot(idx + 1, (np.cumsum(w) / total * 100)[idx], color="#9e9e9e", label="all models up to this rank")
    ax.plot(idx + 1, (np.cumsum(w * passed) / total * 100)[idx], color=COLORS["pass"], label="passing end to end")
    unit = "downloads" if a.weighted else "models"
    ax.set_xlabel("models by rank")
    ax.set_ylabel(f"% of the catalog's {unit}")
    ax.set_ylim(0, 100)
    if len(m) > 100:
        ax.set_xscale("log")
    ax.set_title(f"Cumulative {unit} covered vs rank")
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    return fig


def step_label(step: dict) -> str:
    """A plan step on the chart: ``k. cause`` (a bundle's causes joined by ``+``), shortened."""
    text = one_line(" + ".join(c.text() for c in step["causes"]) or step.get("item", ""))
    return one_line(f"{step['step']}. {text}", LABEL_CHARS)


def _blockers(a: Analysis) -> plt.Figure | None:
    """The plan's steps in plan order: what each frees (downloads; models without them)."""
    steps = a.plan["steps"][:TOP_BLOCKERS]
    if not steps:
        return None
    labels = [step_label(s) for s in steps]
    values = [float(s["weight_freed"]) for s in steps]
    fig, ax = plt.subplots(figsize=(8, 0.35 * len(labels) + 1.2))
    # A "$" would start matplotlib mathtext: labels come from records, so show it literally.
    ax.barh(range(len(labels)), values, color=COLORS["pass"])
    ax.set_yticks(range(len(labels)), [label.replace("$", r"\$") for label in labels], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("downloads freed by the step" if a.weighted else "models freed by the step")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: compact(v)))
    ax.set_title(fix_next_title(a.weighted))
    fig.tight_layout()
    return fig
