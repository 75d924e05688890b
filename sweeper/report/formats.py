"""Models in formats that are not PyTorch (gguf, onnx, mlx, ...): listed apart, with their
share of the catalog's downloads, and outside every pass-rate denominator."""

from __future__ import annotations

import pandas as pd

from sweeper.report.escape import code, compact, md, num, pct, table
from sweeper.report.load import SweepData

NOT_PYTORCH = "not_pytorch"
INTRO = (
    "Repos whose weights are a format the PyTorch device does not run as is (llama.cpp's GGUF, ONNX, MLX, "
    "CTranslate2, ...): named, never failed, and left out of the download total the coverage figure divides by."
)


def mask(data: SweepData) -> pd.Series:
    """Which models are in a format that is not PyTorch."""
    return data.models["reason_kind"] == NOT_PYTORCH


def table_of(data: SweepData) -> pd.DataFrame:
    """Per format: models, downloads, share of all the catalog's downloads, examples."""
    m = data.models[mask(data)]
    total = float(data.models["downloads"].fillna(0).sum())
    if m.empty:
        return pd.DataFrame(columns=["format", "models", "downloads", "share", "examples"])
    m = m.assign(format=m["reason_op"].fillna("(unnamed)"), _w=m["downloads"].fillna(0))
    g = m.sort_values("rank").groupby("format", sort=False)
    out = g.agg(models=("key", "size"), downloads=("_w", "sum"))
    out["share"] = out["downloads"] / total if total else None
    out["examples"] = g["model_id"].agg(lambda ids: list(ids.iloc[:3]))
    return out.reset_index().sort_values(["downloads", "models"], ascending=False, kind="stable")


def render(frame: pd.DataFrame, *, weighted: bool) -> str:
    """The Markdown table (or a line saying there are none)."""
    if frame.empty:
        return "_No model in a format that is not PyTorch._"
    headers = ["format", "models", *(["downloads", "share of downloads"] if weighted else []), "examples"]
    rows = [[code(r.format), num(r.models), *([compact(r.downloads), pct(r.share)] if weighted else []),
             ", ".join(md(e) for e in r.examples)] for r in frame.itertuples()]
    return table(headers, rows)
