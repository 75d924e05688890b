"""`sweep report OUT --against OTHER`: a bfloat16 sweep read against the float32 sweep of the
same catalog names the models whose outcome differs, with both reasons, and the root causes
each dtype adds to the plan."""

from __future__ import annotations

from pathlib import Path

import pytest
from report_factory import meta, reason, record, write_sweep

from sweeper.cli import main


def _dtype(dtype: str) -> dict:
    return meta(config={"device": "trnsim", "dtype": dtype, "collect_all": True})


def test_the_bfloat16_report_says_what_differs_from_float32(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f32 = write_sweep(tmp_path / "f32", [
        record("org/same", 1, 100),
        record("org/xlnet", 2, 80),
        record("org/fft", 3, 60, "fail", fail_at="forward",
               blockers=[reason("unsupported_dtype", "aten::_fft_r2c", "aten::_fft_r2c: trnsim has no torch.complex64 support")]),
    ], _dtype("float32"))  # fmt: skip
    bf16 = write_sweep(tmp_path / "bf16", [
        record("org/same", 1, 100),
        record("org/xlnet", 2, 80, "fail", fail_at="forward", blockers=[reason("unsupported_op", "aten::bilinear")]),
        record("org/fft", 3, 60, "fail", fail_at="forward",
               blockers=[reason("unsupported_dtype", "aten::_fft_r2c", "aten::_fft_r2c: trnsim has no torch.complex64 support")]),
    ], _dtype("bfloat16"))  # fmt: skip
    with pytest.raises(SystemExit) as done:
        main(["report", str(bf16), "--against", str(f32)])
    assert not done.value.code
    text = (bf16 / "report.md").read_text()
    section = text.split("## Against float32\n", 1)[1].split("\n## ", 1)[0]
    assert "This `bfloat16` sweep against the `float32` sweep of the same catalog: 3 models in both, 1 with another outcome." in section
    assert "| [org/xlnet](https://huggingface.co/org/xlnet) | pass | device fail: unsupported\\_op `aten::bilinear`" in section
    assert "org/same" not in section and "org/fft" not in section  # the same outcome in both
    assert "Root causes only in `bfloat16`: lower `aten::bilinear` (+ backward) (1 models)." in section
    assert "Root causes only in `float32`: none." in section
    # The float32 sweep's own report has no such section.
    with pytest.raises(SystemExit):
        main(["report", str(f32)])
    assert "## Against" not in (f32 / "report.md").read_text()
