"""The report per library, and formats that are not PyTorch listed apart, outside the
download total the coverage figure divides by."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from report_factory import meta, reason, record, write_sweep

from sweeper.report.commands import write_report


def _records():
    gguf = record("org/model-GGUF", 2, 600, "skip", fail_at="load", blockers=[reason("not_pytorch", "gguf", "not a PyTorch model: gguf")])
    return [
        record("org/bert", 1, 300),
        dataclasses.replace(record("timm/resnet50.a1_in1k", 3, 100), library_name="timm", model_type="resnet50"),
        dataclasses.replace(gguf, library_name="gguf"),
    ]


def test_not_pytorch_formats_are_listed_apart_and_outside_the_coverage_denominator(tmp_path: Path) -> None:
    text = write_report(write_sweep(tmp_path / "out", _records(), meta(total=3)), charts=False).read_text()
    # 400 PyTorch downloads, all passing: the 600 of the GGUF repo are not in the total.
    assert ("**100.0% of the downloads of this catalog's PyTorch-format models run end to end on trnsim** (40.0% of "
            "all its downloads: the 1 repos in formats that are not PyTorch are left out of every share below)") in text
    section = text.split("## Not PyTorch formats", 1)[1].split("##", 1)[0]
    assert "| `gguf` | 1 | 600 | 60.0% | org/model-GGUF |" in section
    libraries = text.split("## By library", 1)[1].split("\n## ", 1)[0]
    assert "| timm | 1 | 1 | 1 | 100.0% | 100 | 100.0% |" in libraries
    assert "| transformers | 1 | 1 | 1 | 100.0% | 300 | 100.0% |" in libraries
    # The GGUF repo is named with its downloads, but no share of them: never tried, outside the total.
    assert "| gguf | 1 | 0 | 0 | — | 600 | — | 1 | 0 | — |" in libraries
