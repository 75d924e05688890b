"""A report over the real top-1,000 Hub snapshot, with outcomes assigned by simple rules."""

from __future__ import annotations

import csv
from pathlib import Path

from report_factory import meta, reason, record, write_sweep

from sweeper.report.commands import write_report

UPSAMPLE = "aten::upsample_bilinear2d"
LSTM = "aten::_thnn_fused_lstm_cell"


def catalog_records(path: Path) -> tuple[list, dict]:
    """Records for every row: non-transformers libraries are environment outcomes, vision
    models fail on bilinear upsampling (speech ones on LSTM too), the rest pass."""
    records, expected = [], {"total": 0, "passing": 0, "tried": 0}
    with open(path, encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            downloads, task = int(row["downloads"]), row["pipeline_tag"] or None
            kw = {"task": task, "model_type": row["model_type"] or None}
            expected["total"] += downloads
            if row["library_name"] not in ("transformers", "sentence-transformers"):
                rec = record(row["id"], int(row["rank"]), downloads, "skip", blockers=[reason("unsupported_library")], **kw)
            elif task and ("image" in task or "audio" in task or "speech" in task):
                ops = [UPSAMPLE] + ([LSTM] if "speech" in task or "audio" in task else [])
                blockers = [reason("unsupported_op", op) for op in ops]
                rec = record(row["id"], int(row["rank"]), downloads, "fail", fail_at="forward", blockers=blockers, **kw)
                expected["tried"] += downloads
            else:
                rec = record(row["id"], int(row["rank"]), downloads, **kw)
                expected["passing"] += downloads
                expected["tried"] += downloads
            records.append(rec)
    return records, expected


def test_top1000_report_figures_match_the_catalog(tmp_path: Path, top1000_csv: Path) -> None:
    records, expected = catalog_records(top1000_csv)
    out = write_sweep(tmp_path / "out", records, meta(total=len(records)))
    text = write_report(out, charts=False).read_text()
    share = 100 * expected["passing"] / expected["total"]
    assert f"**{share:.1f}% of the downloads of this catalog's PyTorch-format models run end to end on trnsim**" in text
    assert f"| **models** | {len(records):,} |" in text
    # Upsampling alone frees the vision models; the speech ones need the LSTM cell too.
    assert "| 1 | lower `aten::upsample_bilinear2d` (+ backward) | device |" in text
    assert "| 2 | lower `aten::_thnn_fused_lstm_cell` (+ backward) | device |" in text
    assert f"Fixing every cause reaches at most {100 * expected['tried'] / expected['total']:.1f}%" in text
    assert "| environment | unsupported\\_library |" in text
    # The failing models' page lists failing models only (the page lists every one).
    failing = (out / "details" / "failing-models.md").read_text()
    assert "FacebookAI/xlm-roberta-large" not in failing and "google/vit-base-patch16-224" in failing
    page = (out / "index.html").read_text()
    assert '"FacebookAI/xlm-roberta-large"' in page
