"""The report says the float32 math a sweep ran under, and keeps gaps within the device's
declared precision apart from failures."""

from __future__ import annotations

from pathlib import Path

from report_factory import meta, record, write_sweep

from sweeper.records import Reason, ReasonKind
from sweeper.report.commands import write_report

TF32 = {"float32_matmul": "tf32", "float32_conv": "tf32", "source": "profile trnsim-2026.08-tf32", "strict": False}


def test_the_header_says_the_precision_and_within_precision_is_no_failure(tmp_path: Path) -> None:
    within = {"forward": {"max_abs": 0.004, "max_rel": 0.004, "within": False},
              "within_precision": {"stage": "forward", "tensor": "output", "within": True,
                                   "float64": {"within": True, "within_exact": False}}}
    over = {"forward": {"max_abs": 0.5, "max_rel": 0.5, "within": False},
            "over": {"stage": "forward", "tensor": "output", "max_abs": 0.5}}
    recs = [
        record("org/resnet", 1, 100, precision=TF32, numerics=within, max_abs_diff=0.004),
        record("org/wrong", 2, 50, "fail", fail_at="forward", blockers=[Reason(ReasonKind.NUMERICS, "off")],
               precision=TF32, numerics=over, max_abs_diff=0.5),
        record("org/same", 3, 10, precision=TF32, numerics={"forward": {"max_abs": 0.0, "max_rel": 0.0, "within": True}},
               max_abs_diff=0.0),
    ]
    text = write_report(write_sweep(tmp_path / "out", recs, meta(total=3))).read_text()
    assert "| **float32 math** | float32 matmul tf32, conv tf32 |" in text
    assert "1 model(s) differ past the tolerance but within the device's declared float32 math" in text
    assert "and 1 fail with `numerics`" in text  # the within-precision model is not counted as over
