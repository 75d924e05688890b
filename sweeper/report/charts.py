"""PNG charts (matplotlib, Agg): pass rate by stage, downloads covered vs rank, blockers.

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
from sweeper.report.escape import compact

COLORS = {"pass": "#2e7d32", "fail": "#c62828", "crash": "#6a1b9a", "timeout": "#ef6c00", "oom": "#ad1457",
          "blocked": "#9e9e9e", "skip": "#f9a825", "not recorded": "#e0e0e0"}  # fmt: skip
TOP_BLOCKERS = 15


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


def _blockers(a: Analysis) -> plt.Figure | None:
    if not a.ops.empty:
        top = a.ops.head(TOP_BLOCKERS)
        labels, values, what = list(top["op"]), top["downloads" if a.weighted else "models"], "blocking op"
    elif not a.reasons.empty:
        top = a.reasons.head(TOP_BLOCKERS)
        labels = [k + (f" {o}" if o else "") for k, o in zip(top["reason_kind"], top["reason_op"])]
        values, what = top["downloads" if a.weighted else "models"], "first reason"
    else:
        return None
    fig, ax = plt.subplots(figsize=(8, 0.35 * len(labels) + 1.2))
    # A "$" would start matplotlib mathtext: labels come from records, so show it literally.
    ax.barh([str(label)[:60].replace("$", r"\$") for label in labels], values.to_numpy(dtype=float), color=COLORS["fail"])
    ax.invert_yaxis()
    ax.set_xlabel("downloads of models blocked" if a.weighted else "models blocked")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: compact(v)))
    ax.set_title(f"Top blockers ({what})")
    fig.tight_layout()
    return fig
