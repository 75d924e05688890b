"""The report's Quantization section and the page's method, recomputed from records made here."""

from __future__ import annotations

import json
from pathlib import Path

from report_factory import meta, reason, record, write_sweep

from sweeper.report.analysis import analyse
from sweeper.report.commands import write_report
from sweeper.report.load import read_sweep
from sweeper.report.page_data import page_data


def _q(method: str, applied: bool, **extra) -> dict:
    return {"method": method, "bits": 4, "format": "nf4", "source": "id", "evidence": "the id says 'bnb-4bit'",
            "package": {"bitsandbytes": "bitsandbytes", "gptq": "gptqmodel"}[method], "package_version": "0.50.2",
            "applied": applied, **extra}


def _records() -> list:
    gemm = reason("lowering_tool_error", "bitsandbytes::gemm_4bit", "failed to legalize operation 'torch.operator'")
    missing = reason("missing_dependency", "gptqmodel", "gptq checkpoints need gptqmodel (not installed)")
    return [
        record("org/plain", 1, 9000),
        record("org/a-bnb-4bit", 2, 5000, quantization=_q("bitsandbytes", True)),
        record("org/b-bnb-4bit", 3, 3000, "fail", fail_at="compile", blockers=[gemm], quantization=_q("bitsandbytes", True)),
        record("org/c-GPTQ", 4, 2000, "error", blockers=[missing],
               quantization=_q("gptq", False, why="gptq checkpoints need gptqmodel (not installed)")),
    ]


def _section(text: str) -> str:
    start = text.index("## Quantization")
    return text[start:text.index("\n## ", start + 1)]


def test_the_section_counts_each_method_by_what_its_records_hold(tmp_path: Path) -> None:
    records = _records()
    write_sweep(tmp_path, records, meta(total=len(records)))
    text = write_report(tmp_path, charts=False).read_text(encoding="utf-8")
    section = _section(text)
    lines = {line.split(" | ")[0].strip("| `"): line for line in section.splitlines() if line.startswith("| `")}
    # bitsandbytes: 2 models, 8.0k downloads, both ran with it, 1 pass, 1 the lowering tool's on gemm_4bit.
    assert lines["bitsandbytes"].startswith("| `bitsandbytes` | 2 | 8.0k | 2 | 1 | 0 | 1 | 0 |"), lines
    assert "`bitsandbytes::gemm_4bit` (1)" in lines["bitsandbytes"]
    # gptq: 1 model not applied, with why.
    assert lines["gptq"].startswith("| `gptq` | 1 | 2.0k | 0 | 0 | 0 | 0 | 1 (gptq checkpoints need gptqmodel"), lines
    assert "org/plain" not in section


def test_a_sweep_without_quantized_repos_has_no_section_and_the_page_names_a_method(tmp_path: Path) -> None:
    plain = [record("org/plain", 1, 9000)]
    write_sweep(tmp_path / "plain", plain, meta(total=1))
    assert "## Quantization" not in write_report(tmp_path / "plain", charts=False).read_text(encoding="utf-8")
    records = _records()
    write_sweep(tmp_path / "q", records, meta(total=len(records)))
    data = json.loads(json.dumps(page_data(analyse(read_sweep(tmp_path / "q")), charts=[], hub=None)))
    strings, quant = data["strings"], data["rows"]["quant"]
    assert {int(i): strings[s] for i, s in quant.items()} == {1: "bitsandbytes (applied)", 2: "bitsandbytes (applied)",
                                                               3: "gptq (not applied)"}


def test_the_kernels_a_device_lacks_per_method_join_fix_next_as_causes(tmp_path: Path) -> None:
    # gptqmodel compiles GPTQ's dequantise with Inductor; FP8 activations are float8 casts.
    inductor = reason("unsupported_feature", "inductor codegen (gptqmodel)",
                      "gptqmodel (_forward_eager) compiles its own code with torch.compile (Inductor): Inductor has "
                      "no code generation for device 'trnsim' (InductorError: KeyError: 'trnsim')")
    fp8 = reason("unsupported_dtype", "aten::empty_strided", "aten::empty_strided: trnsim has no torch.float8_e4m3fn support")
    records = [
        record("org/d-GPTQ", 1, 4000, "fail", fail_at="forward", blockers=[inductor], quantization=_q("gptq", True)),
        record("org/e-FP8", 2, 1000, "fail", fail_at="forward", blockers=[fp8],
               quantization={**_q("gptq", True), "method": "compressed-tensors", "package": "compressed-tensors"}),
    ]
    write_sweep(tmp_path, records, meta(total=len(records)))
    write_report(tmp_path, charts=False)
    summary = json.loads((tmp_path / "summary.json").read_text())
    causes = [(c["kind"], c["name"]) for s in summary["fix_next"]["steps"] for c in s["causes"]]
    assert causes == [("feature", "Inductor code generation"), ("dtype", "float8_e4m3fn")], causes
    section = _section((tmp_path / "report.md").read_text(encoding="utf-8"))
    assert "`inductor codegen (gptqmodel)` (1)" in section and "`aten::empty_strided` (1)" in section
