"""The Fix next plan, recomputed from records.jsonl alone: the causes report.md's rows name,
fixed step by step, must free the models and downloads its rows say, over the Summary's
denominator, and summary.json must list the same steps in the same order.

The recomputation reads the records with ``json`` and nothing of the report code (the
diagnostic's signature is the records' own contract, ``sweeper.diagnostics``): a cause is
an op with its backward (any overload), a lowering-tool bug (its op and diagnostic), a dtype
or a feature the device lacks; a model is freed when every blocker it has is a fixed cause's.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from report_factory import reason, record, write_sweep

from sweeper.diagnostics import signature
from sweeper.records import Origin
from sweeper.report.commands import write_report

PUBLISHED = [Path(__file__).resolve().parents[2] / "reports" / name for name in ("top1000-trnsim", "top1000-trnsim-bf16")]
OP_KINDS = ("unsupported_op", "compile_error")  # device kinds an op's lowering removes
FEATURES = {"dynamic_shape": "dynamic shapes"}
# k, fix, whose, models freed, [downloads freed,] coverage after, reproducer
ROW = re.compile(r"^\| (\d+) \| (.+) \| ([a-z ,]+) \| ([\d,]+) \| (?:(\S+) \| )?([\d.]+)% \| (.*) \|$")
UNITS = {"k": 1e3, "M": 1e6, "B": 1e9}
COMPLEX = "trnsim has no torch.complex64 support"


def tool(op: str | None, message: str):
    """A blocker the lowering tool owns, with its diagnostic."""
    blocker = reason("lowering_tool_error", op, message)
    return dataclasses.replace(blocker, origin=Origin.LOWERING_TOOL, stage="compile")


def diagnostic(op: str, said: str, repro: str) -> str:
    return (f"LoweringToolError: backward graph: Torch-MLIR failed to lower {op}, which the profile marks native (a "
            f"lowering-tool finding, not a chip gap): {said}\nreproducer: /x/out/repros/{repro}\nfull diagnostic:\n{said}")


DEPTHWISE = "expects input feature dimension (96) to be a multiple of feature_group_count. Got feature_group_count = 576."
CONSTANT = "failed to legalize operation 'torch.constant.int'"


def plan_records() -> list:
    """An op with its backward, one op failing with two diagnostics (two bugs), a dtype that
    also covers the tool's failure on an op refused for it, a bundle (two ops that free a
    model only together), a feature, and models no fix frees (numerics, the harness's oom)."""
    conv = "aten::convolution_backward"
    return [
        record("org/pass", 1, 10000),
        record("org/up", 2, 3000, "fail", fail_at="forward",
               blockers=[reason("unsupported_op", "aten::upsample_bilinear2d.vec"),
                         reason("unsupported_op", "aten::upsample_bilinear2d_backward.default")]),
        record("org/mobilenet", 3, 2500, "fail", fail_at="compile",
               blockers=[tool(conv, diagnostic(conv, DEPTHWISE, "convolution_backward-aaaa1111.py"))]),
        record("org/efficientnet", 4, 1200, "fail", fail_at="compile",
               blockers=[tool(conv, diagnostic(conv, DEPTHWISE.replace("96", "40").replace("576", "240"),
                                               "convolution_backward-aaaa1111.py"))]),
        record("org/video", 5, 800, "fail", fail_at="compile",
               blockers=[tool(conv, diagnostic(conv, CONSTANT, "convolution_backward-bbbb2222.py"))]),
        # The device lacks complex64: the tool's failure on the same FFT op is no separate fix.
        record("org/audio", 6, 2000, "fail", fail_at="forward",
               blockers=[reason("unsupported_dtype", "aten::_fft_r2c", f"aten::_fft_r2c: {COMPLEX}"),
                         tool("aten::_fft_r2c", diagnostic("aten::_fft_r2c", "TypeError: 'NoneType'", "fft.py"))]),
        record("org/audio-small", 7, 300, "fail", fail_at="forward",
               blockers=[reason("unsupported_dtype", "aten::_fft_r2c.default", f"aten::_fft_r2c: {COMPLEX}")]),
        record("org/numerics", 8, 5000, "fail", fail_at="forward",
               blockers=[reason("unsupported_op", "aten::histc"), reason("numerics")]),
        record("org/gguf", 9, 50000, "error", blockers=[reason("not_pytorch", "gguf")]),
        record("org/oom", 10, 400, "fail", fail_at="compile",
               blockers=[reason("unsupported_op", "aten::upsample_bilinear2d"),
                         dataclasses.replace(reason("oom"), origin=Origin.HARNESS, stage="compile")]),
        # Neither op frees anything alone: one step fixes both.
        record("org/cum", 11, 900, "fail", fail_at="forward",
               blockers=[reason("unsupported_op", "aten::cummax"), reason("unsupported_op", "aten::cummin")]),
        record("org/dynamic", 12, 600, "fail", fail_at="compile", blockers=[reason("dynamic_shape", "aten::nonzero")]),
        record("org/gated", 13, 300, "error", blockers=[reason("gated")]),
    ]  # fmt: skip


# --- the recomputation: json and the records' own fields only ---------------------------


def read_records(path: Path) -> list[dict[str, Any]]:
    """The last record of each key (a resumed sweep appends); unreadable lines skipped."""
    out: dict[str, dict[str, Any]] = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and isinstance(rec.get("key"), str):
            out[rec["key"]] = rec
    return list(out.values())


def op_name(op: str, *, keep_backward: bool = False) -> str:
    """``ns::name`` without an overload (and, for the device's ops, a ``_backward`` tail)."""
    ns, _, name = op.rpartition("::")
    name = name.split(".")[0]
    return f"{ns}::{name if keep_backward else re.sub(r'_backward(_[a-z0-9_]+)?$', '', name)}"


def dtype_named(message: str) -> str:
    found = re.findall(r"\btorch\.(\w+)", message or "")
    return found[-1] if found else "unknown"


def causes_of(rec: dict[str, Any]) -> list[tuple[str, str, str] | None]:
    """Each blocker's cause as (kind, name, signature); None when no fix covers it."""
    blockers = rec.get("blockers") or ([rec["reason"]] if rec.get("reason") else [{"kind": "unknown"}])
    refused = {op_name(b["op"]): dtype_named(b.get("message") or "") for b in blockers
               if b.get("kind") == "unsupported_dtype" and b.get("origin") == "device" and b.get("op")}
    out: list[tuple[str, str, str] | None] = []
    for b in blockers:
        op, origin, kind = b.get("op") or "", b.get("origin"), b.get("kind")
        if origin == "lowering_tool":
            dtype = refused.get(op_name(op)) if op else None
            out.append(("dtype", dtype, "") if dtype else
                       ("tool", op_name(op, keep_backward=True) if op else "", signature(b.get("message"))))
        elif origin == "device" and kind in OP_KINDS and op:
            out.append(("op", op_name(op), ""))
        elif origin == "device" and kind == "unsupported_dtype":
            out.append(("dtype", dtype_named(b.get("message") or ""), ""))
        elif origin == "device" and kind in FEATURES:
            out.append(("feature", FEATURES[kind], ""))
        elif origin == "device" and kind == "unsupported_feature" and "Inductor has no code generation" in (b.get("message") or ""):
            out.append(("feature", "Inductor code generation", ""))  # a library's own torch.compile
        else:
            out.append(None)
    return out


def in_catalog(rec: dict[str, Any]) -> bool:
    """Formats that are not PyTorch are outside the Summary's denominator."""
    return (rec.get("reason") or {}).get("kind") != "not_pytorch"


def recompute(records: list[dict[str, Any]], steps: list[list[tuple[str, str, str]]]) -> dict[str, Any]:
    """Start, ceiling and, after each step's causes are fixed, the models and downloads freed."""
    catalog = [r for r in records if in_catalog(r)]
    total = sum(r.get("downloads") or 0 for r in catalog)
    passing = sum(r.get("downloads") or 0 for r in catalog if r.get("outcome") == "pass")
    failing = [(r.get("downloads") or 0, causes_of(r)) for r in catalog if r.get("outcome") != "pass"]
    coverable = [(w, set(cs)) for w, cs in failing if None not in cs]
    fixed: set[tuple[str, str, str]] = set()
    out = []
    for causes in steps:
        fixed |= set(causes)
        freed = [w for w, cs in coverable if cs <= fixed]
        out.append({"models": len(freed), "downloads": sum(freed), "coverage": (passing + sum(freed)) / total})
    return {"start": passing / total, "ceiling": (passing + sum(w for w, _ in coverable)) / total,
            "ceiling_models": len(coverable), "steps": out}


# --- report.md as printed ---------------------------------------------------------------


def plan_rows(text: str) -> list[dict[str, Any]]:
    """The Fix next table's rows."""
    body = text[text.index("## Fix next") :].split("\n## ", 1)[0]
    rows = []
    for line in body.splitlines():
        if found := ROW.match(line):
            k, fix, whose, freed, downloads, cov, repro = found.groups()
            rows.append({"k": int(k), "fix": fix, "whose": set(whose.split(", ")), "freed": int(freed.replace(",", "")),
                         "downloads": downloads, "coverage": float(cov), "repro": repro})  # fmt: skip
    return rows


def short_number(text: str) -> tuple[float, float]:
    """``90.1M`` as a value and how far the number it stands for may be from it (its rounding)."""
    unit = UNITS.get(text[-1], 0)
    return (float(text[:-1]) * unit, 0.05 * unit) if unit else (float(text), 0.0)


def check_report(folder: Path) -> tuple[list[dict[str, Any]], list[list[tuple[str, str, str]]], dict[str, Any]]:
    """Recompute the Fix next rows of ``folder``'s report.md from its records.jsonl."""
    text = (folder / "report.md").read_text(encoding="utf-8")
    rows = plan_rows(text)
    plan = json.loads((folder / "summary.json").read_text())["fix_next"]
    assert rows and [r["k"] for r in rows] == list(range(1, len(rows) + 1))
    steps = [[(c["kind"], c["name"], c["signature"]) for c in s["causes"]] for s in plan["steps"]]
    got = recompute(read_records(folder / "records.jsonl"), steps)
    summary_share = float(re.search(r"\*\*([\d.]+)% of the downloads of this catalog's PyTorch-format", text).group(1))
    # One denominator: the plan starts where the Summary stands.
    assert float(re.search(r"Today ([\d.]+)% of the PyTorch-format", text).group(1)) == summary_share
    assert summary_share == pytest.approx(100 * got["start"], abs=0.05)
    ceiling = re.search(r"Fixing every cause reaches at most ([\d.]+)% \(([\d,]+) more models\)", text)
    assert float(ceiling.group(1)) == pytest.approx(100 * got["ceiling"], abs=0.05)
    assert int(ceiling.group(2).replace(",", "")) == got["ceiling_models"]
    before = 0
    for row, mine, step, causes in zip(rows, got["steps"], plan["steps"], steps):
        assert row["freed"] == mine["models"] - before == step["models_freed"], row
        assert step["weight_freed_total"] == mine["downloads"], row
        value, rounding = short_number(row["downloads"])
        assert value == pytest.approx(step["weight_freed"], abs=rounding + 1e-6), row
        assert row["coverage"] == pytest.approx(100 * mine["coverage"], abs=0.05), row
        assert row["whose"] == {"lowering tool" if kind == "tool" else "device" for kind, _, _ in causes}, row
        for _kind, name, _ in causes:  # the row names each of its causes
            assert (name or "whole graph") in row["fix"].replace("\\_", "_"), (row, name)
        assert mine["models"] > before, row  # every step frees something
        before = mine["models"]
    return rows, steps, got


def test_fix_next_agrees_with_the_records_with_two_bugs_of_one_op_a_dtype_and_a_bundle(tmp_path: Path) -> None:
    out = write_sweep(tmp_path / "out", plan_records())
    write_report(out, charts=False)
    rows, steps, got = check_report(out)
    text = (out / "report.md").read_text()
    conv = "aten::convolution_backward"
    assert steps == [
        [("tool", conv, "expects input feature dimension (N) to be a multiple of feature_group_count. "
                        "Got feature_group_count = N.")],  # two models, one bug
        [("op", "aten::upsample_bilinear2d", "")],  # its forward and backward, any overload: one fix
        [("dtype", "complex64", "")],  # covers the tool's _fft_r2c failure too
        [("tool", conv, "failed to legalize operation 'torch.constant.int'")],  # the same op's other bug
        [("feature", "dynamic shapes", "")],
        [("op", "aten::cummax", ""), ("op", "aten::cummin", "")],  # a bundle: frees only together
    ]
    assert rows[0]["repro"] == "[convolution\\_backward-aaaa1111.py](repros/convolution_backward-aaaa1111.py)"
    assert rows[3]["repro"] == "[convolution\\_backward-bbbb2222.py](repros/convolution_backward-bbbb2222.py)"
    assert rows[2]["fix"] == "dtype `complex64` on the device" and rows[2]["freed"] == 2
    assert rows[5]["fix"] == "together: lower `aten::cummax` (+ backward) + lower `aten::cummin` (+ backward)"
    # 27,000 downloads without the gguf repo's; 10,000 pass. Numerics and the harness's oom stay failing.
    assert "Today 37.0% of the PyTorch-format downloads run end to end." in text
    assert got["ceiling_models"] == 8 and "Fixing every cause reaches at most 78.9% (8 more models)." in text
    assert "| 2 | lower `aten::upsample_bilinear2d` (+ backward) | device | 1 | 3.0k | 61.9% | — |" in text
    # The dtype's page row names the op refused for it; the tool's _fft_r2c failure is in no bug row.
    gaps = text.split("## Dtypes and features the device lacks", 1)[1].split("\n## ", 1)[0]
    assert "| dtype `complex64` on the device | 2 | 2.3k | `aten::_fft_r2c` (2) |" in gaps
    bugs = text.split("## Lowering-tool bugs by diagnostic", 1)[1].split("\n## ", 1)[0]
    assert "_fft_r2c" not in bugs and bugs.count(f"`{conv}`") == 2


@pytest.mark.parametrize("folder", PUBLISHED, ids=lambda p: p.name)
def test_the_published_sweeps_fix_next_agrees_with_its_records(tmp_path: Path, folder: Path) -> None:
    if not (folder / "records.jsonl").is_file():
        pytest.skip(f"no published sweep {folder.name} in this checkout")
    out = tmp_path / folder.name
    out.mkdir()
    for name in ("records.jsonl", "sweep.json"):
        if (folder / name).is_file():
            shutil.copy(folder / name, out / name)
    write_report(out, charts=False)
    rows, _, _ = check_report(out)
    assert len(rows) >= 5


def test_a_long_plan_stops_at_25_steps_and_shows_10_on_the_first_screen(tmp_path: Path) -> None:
    recs = [record("org/pass", 1, None)] + [
        record(f"org/m{i}", i + 2, None, "fail", fail_at="forward", blockers=[reason("unsupported_op", f"aten::op{i:02d}")])
        for i in range(30)
    ]  # fmt: skip
    out = write_sweep(tmp_path / "out", recs)
    text = write_report(out, charts=False).read_text()
    plan = text[text.index("## Fix next") :].split("\n## ", 1)[0]
    assert [r["k"] for r in plan_rows(text)] == list(range(1, 11))
    assert "All 25 steps, with each cause's models: [details/plan.md](details/plan.md)." in plan
    assert "| 10 | lower `aten::op09` (+ backward) | device | 1 | 35.5% | — |" in plan  # of 31 models, not downloads
    whole = (out / "details" / "plan.md").read_text()
    assert "| 25 | lower `aten::op24` (+ backward) | device | 1 | 83.9% | — |" in whole
    assert "5 more models" not in plan and "(30 more models)" in plan
