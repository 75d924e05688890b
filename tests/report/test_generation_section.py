"""The report's Generation section, the Fix next plan's view of the generate stage's
blockers and the page's generation text, on records made here the way the generate stage
writes them: models that do not generate (no stage, no findings), one whose compiled run
fails on ``aten::index_copy`` (the static cache's update, refused by the device), one
whose eager tokens part from the CPU's at a tie, and one that recompiles at every decode
step without a static cache."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

from report_factory import meta, reason, record, write_sweep

from sweeper.records import Origin
from sweeper.report.analysis import analyse
from sweeper.report.commands import write_report
from sweeper.report.generation_fields import COLUMNS, generation_columns
from sweeper.report.load import read_sweep
from sweeper.report.page_data import page_data

STAGES = ["load", "to_device", "forward", "backward", "compile", "generate", "shapes"]


def _compiled(**over: Any) -> dict[str, Any]:
    found = {"backend": "trnsim", "fullgraph": True, "cache_implementation": "static",
             "compiles_per_step": [1, 1, 0, 0, 0, 0, 0, 0], "compiles": 2, "recompiles": 0,
             "recompiles_per_token": 0.0, "recompiles_every_step": False, "seconds": 2.4, "tokens_equal": True,
             "verdict": "equal", "max_logit_diff": 9e-7, "cache": "StaticCache"}
    return {**found, **over}


def _generation(kind: str = "decoder-only", cls: str = "LlamaForCausalLM", *, eager: dict | None = None,
                compiled: dict | None = None, ties: list[str] | None = None) -> dict[str, Any]:
    found: dict[str, Any] = {"kind": kind, "class": cls, "new_tokens": 8, "batch": 2, "modes": ["eager", "compiled"],
                             "cpu_seconds": 0.04,
                             "eager": eager or {"seconds": 0.05, "tokens_equal": True, "verdict": "equal",
                                                "max_logit_diff": 1e-6, "cache": "DynamicCache"},
                             "compiled": compiled if compiled is not None else _compiled()}
    if ties is not None:  # absent when a mode raised, as the stage writes it
        found["tokens_equal"], found["ties"] = not ties, ties
    return found


def _sampled() -> dict[str, Any]:
    """A diffusers pipeline's findings: images against the CPU's, no cache."""
    return {"kind": "diffusion", "pipeline": "StableDiffusionPipeline", "steps": 2, "guidance_scale": 7.5,
            "modes": ["eager", "compiled"], "cpu_seconds": 0.3,
            "eager": {"seconds": 0.4, "max_abs_diff": 1e-6, "within": True, "verdict": "equal"},
            "compiled": {"backend": "trnsim", "seconds": 3.1, "max_abs_diff": 1e-6, "within": True, "verdict": "equal"}}


def _records() -> list:
    index_copy = dataclasses.replace(
        reason("unsupported_op", "aten::index_copy", "trnsim refuses aten::index_copy"), stage="generate",
        origin=Origin.DEVICE)
    raised = {k: v for k, v in _compiled().items() if k in ("backend", "fullgraph", "cache_implementation",
                                                            "compiles_per_step", "compiles", "recompiles",
                                                            "recompiles_per_token", "recompiles_every_step", "seconds")}
    tie = {"seconds": 0.05, "tokens_equal": False, "verdict": "tie", "max_logit_diff": 1e-6, "cache": "DynamicCache",
           "first_divergence": {"step": 3, "row": 1, "cpu_token": 5, "device_token": 7, "cpu_top2_gap": 1e-7,
                                "bound": 1e-5}}
    recompiling = _compiled(cache_implementation=None, why_not_static="builds its own cache",
                            compiles_per_step=[1, 1, 1, 1, 1, 1, 1, 1], compiles=8, recompiles=6,
                            recompiles_per_token=0.857, recompiles_every_step=True, cache="DynamicCache")
    return [
        record("org/bert", 1, 50000, stages=[s for s in STAGES if s != "generate"]),
        record("org/llama", 2, 40000, "fail", fail_at="generate", blockers=[index_copy], task="text-generation",
               model_type="llama", stages=STAGES, generation=_generation(compiled=raised)),
        record("org/t5", 3, 20000, task="text2text-generation", model_type="t5", stages=STAGES,
               generation=_generation("encoder-decoder", "T5ForConditionalGeneration", eager=tie, ties=["eager"])),
        record("org/gpt", 4, 10000, task="text-generation", model_type="gpt2", stages=STAGES,
               generation=_generation(cls="GPT2LMHeadModel", compiled=recompiling, ties=[])),
        record("org/diffusion", 5, 500, task="text-to-image", model_type="unet", stages=STAGES,
               generation=_sampled()),
        # It generates, but its forward failed: the generate stage is blocked, no findings.
        record("org/bart", 6, 300, "fail", fail_at="forward", blockers=[reason("unsupported_op", "aten::histc")],
               task="summarization", model_type="bart", stages=STAGES),
    ]


def _sweep(tmp_path: Path, records: list, stages: list[str] = STAGES) -> str:
    write_sweep(tmp_path, records, meta(config={"device": "trnsim", "stages": stages, "collect_all": True}))
    write_report(tmp_path, charts=False)
    return (tmp_path / "report.md").read_text(encoding="utf-8")


def _section(report: str, heading: str) -> str:
    return report.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def test_the_generation_section_counts_what_the_records_hold(tmp_path: Path):
    report = _sweep(tmp_path, _records())
    section = _section(report, "Generation")
    # 5 of the 6 models that reached the device generate; bart's stage is blocked, llama fails it.
    assert "5 of the 6 models that reached the device generate (decoder-only 2, diffusion 1, encoder-decoder 1, " \
           "70.8k downloads); 4 ran the stage (1 blocked by an earlier stage) and 3 passed it." in section
    assert "| text-generation | 2 | 50.0k | 1 |" in section  # by task: llama fails, gpt passes
    assert "| text2text-generation | 1 | 20.0k | 1 |" in section
    # A mode passes when its verdict is equal or tie; llama's compiled run raised.
    assert "| eager | 4 | 4 (100.0%) | 1 | 0 | 0 |" in section
    assert "| compiled | 4 | 3 (75.0%) | 0 | 0 | 1 |" in section
    assert "A diffusers pipeline with a sampling entry samples" in section
    assert re.search(r"Compiled: 1 model\(s\) recompile after the first decode step, .*\(1 at every step\): "
                     r"\[org/gpt\]", section)
    assert re.search(r"; 1 build their own cache, so their forward compiled without a static cache: \[org/gpt\]",
                     section)
    assert "| unsupported\\_op | `aten::index_copy` | device | 1 | 40.0k | [org/llama]" in section
    assert "[details/generation.md](details/generation.md)" in section
    page = (tmp_path / "details" / "generation.md").read_text(encoding="utf-8")
    assert "[org/t5]" in page and "| raised |" in page and "| 1, 1, 1, 1, 1, 1, 1, 1 |" in page
    summary = json.loads((tmp_path / "summary.json").read_text())["generation"]
    assert (summary["generates"], summary["ran"], summary["passed"], summary["recompiling"]) == (5, 4, 3, 1)


def test_end_to_end_says_it_includes_generating(tmp_path: Path):
    report = _sweep(tmp_path, _records())
    assert "**. For models that generate, end to end includes generating, eager and compiled with a static cache." \
           in _section(report, "Summary")
    assert "models that pass every stage (for models that generate, end to end includes generating, eager and " \
           "compiled with a static cache);" in _section(report, "By library")
    assert "Only models that generate have the generate stage" in _section(report, "Stages")


def test_a_generate_blocker_is_a_step_of_fix_next_with_its_downloads(tmp_path: Path):
    report = _sweep(tmp_path, _records())
    fix = _section(report, "Fix next")
    row = next(line for line in fix.splitlines() if "aten::index_copy" in line)
    assert "40.0k" in row and "device" in row, row
    summary = json.loads((tmp_path / "summary.json").read_text())["fix_next"]["steps"]
    step = next(s for s in summary if any(c["name"] == "aten::index_copy" for c in s["causes"]))
    assert step["models_freed"] == 1 and step["weight_freed"] == 40000


def test_the_page_carries_each_models_generation_text(tmp_path: Path):
    write_sweep(tmp_path, _records(), meta(config={"device": "trnsim", "stages": STAGES, "collect_all": True}))
    data = page_data(analyse(read_sweep(tmp_path)), charts=[], hub=None)
    rows, strings = data["rows"], data["strings"]
    text = dict(zip(rows["id"], (strings[i] for i in rows["generate"])))
    assert text["org/bert"] == ""
    assert text["org/llama"] == ("decoder-only: eager ✓ equal; compiled ✗ unsupported_op aten::index_copy "
                                 "(static cache)")
    assert text["org/t5"].startswith("encoder-decoder: eager ✓ tie at step 3; compiled ✓ equal")
    assert "its own cache, not static; 6 recompiles after the first decode step, every step" in text["org/gpt"]
    assert text["org/diffusion"] == "diffusion: eager ✓ equal; compiled ✓ equal"  # no cache to speak of
    assert "generate" in data["stages"]


def test_a_sweep_where_no_model_generates_has_no_generation_section(tmp_path: Path):
    report = _sweep(tmp_path, [record("org/bert", 1, 10, stages=[s for s in STAGES if s != "generate"]),
                               record("org/vit", 2, 5, "fail", fail_at="forward", stages=[s for s in STAGES if s != "generate"],
                                      blockers=[reason("unsupported_op", "aten::histc")])])
    assert "## Generation" not in report and "generation.md" not in report
    assert "end to end includes generating" not in report
    assert "| generate |" not in report  # no model could run it: no row of the Stages table
    assert not (tmp_path / "details" / "generation.md").exists()


def test_a_long_report_keeps_the_section_to_a_few_lines(tmp_path: Path, monkeypatch):
    from sweeper.report import document

    whole = _section(_sweep(tmp_path / "a", _records()), "Generation")
    monkeypatch.setattr(document, "MAX_LINES", 20)
    short = _section(_sweep(tmp_path / "b", _records()), "Generation")
    assert "| text-generation |" in whole and "| text-generation |" not in short
    assert "Blockers of the generate stage (1): unsupported\\_op `aten::index_copy` (device, 1 models)." in short
    assert "| compiled | 4 | 3 (75.0%) | 0 | 0 | 1 |" in short


def test_a_kind_this_version_does_not_know_keeps_its_name():
    columns = dict(zip(COLUMNS, generation_columns({"kind": "video", "frames": 4})))
    assert columns["generation_kind"] == "video" and columns["generation_text"] == "video"
    assert columns["generation_eager"] is None and columns["generation_static"] is None
    assert generation_columns({}) == (None,) * len(COLUMNS)


def test_a_compiled_run_that_went_on_past_the_devices_refusals_is_not_a_pass():
    refused = ("unsupported_op", "aten::index_copy")
    # As the stage writes it now: the mode keeps the refusals it ran past (--collect-all).
    kept = _generation(compiled=_compiled(blockers=["unsupported_op aten::index_copy"]), ties=[])
    columns = dict(zip(COLUMNS, generation_columns(kept, [refused])))
    assert (columns["generation_eager"], columns["generation_compiled"]) == ("equal", "raised")
    assert "compiled ✗ unsupported_op aten::index_copy" in columns["generation_text"]
    # A record written before modes kept them: the stage's refusals are the compiled mode's.
    legacy = dict(zip(COLUMNS, generation_columns(_generation(ties=[]), [refused])))
    assert (legacy["generation_eager"], legacy["generation_compiled"]) == ("equal", "raised")
    # Decoding that compiled at every step up to the failing last one reads as every step.
    every = _generation(compiled=_compiled(compiles_per_step=[1, 1, 1, 1, 1, 1, 1, 0], recompiles=5))
    assert dict(zip(COLUMNS, generation_columns(every)))["generation_every_step"] is True
