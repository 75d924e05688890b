"""Acceptance: every number of report.md's summary, outcome, stage and numerics tables,
recomputed from records.jsonl with plain pandas (nothing of sweeper on the reading side).

The records include one written by schema 2 whose first reason (lowering tool,
``aten::index_put``) disagrees with its other blockers (device): the report must count it
by the one outcome rule, the same rule the recomputation applies to the raw blockers.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
from report_factory import meta, reason, record, write_sweep

from sweeper.records import Origin, Reason, ReasonKind, StageResult, Status
from sweeper.report.commands import write_report

STAGES = ["load", "to_device", "forward", "backward", "compile"]
PRECEDENCE = ["device", "lowering_tool", "harness", "model", "environment"]
LABELS = {"pass": "pass", "device": "device fail", "lowering_tool": "lowering tool", "harness": "harness",
          "model": "model", "environment": "environment", "skip": "skip"}  # fmt: skip
STAGE_COLUMNS = ["pass", "fail", "crash", "timeout", "oom", "blocked", "skip", "not recorded"]


def _schema2_longformer() -> dict[str, Any]:
    """A schema-2 line as the published sweep wrote it: first reason lowering tool, the rest device."""
    tool = {"kind": "lowering_tool_error", "op": "aten::index_put", "message": "Torch-MLIR failed", "exc_type": None,
            "stage": "compile", "origin": "lowering_tool"}
    dyn = dict(tool, kind="dynamic_shape", op="aten::nonzero", message="data-dependent", origin="device")
    comp = dict(dyn, kind="compile_error")
    stages = {s: {"status": "pass", "seconds": 0.1, "reason": None} for s in STAGES}
    stages["compile"] = {"status": "fail", "seconds": 0.1, "reason": tool}
    return {"sweep_id": "s1", "model_id": "org/longformer", "key": "org/longformer", "device": "trnsim",
            "status": "fail", "rank": 4, "downloads": 1500, "pipeline_tag": "fill-mask", "model_type": "longformer",
            "library_name": "transformers", "stages": stages, "reason": tool, "blockers": [tool, dyn, comp],
            "max_abs_diff": 0.0, "numerics": {"forward": {"max_abs": 0.0, "max_rel": 0.0, "within": True},
                                              "backward": {"max_abs": 0.0, "max_rel": 0.0, "within": True}},
            "notes": {}, "schema_version": 2}  # fmt: skip


def _died(model_id: str, rank: int, downloads: int, status: str, kind: str, stage: str) -> Any:
    """A worker that died mid-stage: only that stage recorded, ``notes.stage`` naming it."""
    why = Reason(ReasonKind(kind), f"worker {kind}", stage=stage)
    rec = record(model_id, rank, downloads, status, blockers=[why])
    rec.stages = {stage: StageResult(Status(status), 1.0, why)}
    rec.notes["stage"] = stage
    return rec


def _records() -> list:
    grads = {"forward": {"max_abs": 0.0, "max_rel": 0.0, "within": True},
             "backward": {"max_abs": 1e-7, "max_rel": 2e-7, "within": True}}
    harness = Reason(ReasonKind.INPUT_SYNTHESIS, "no inputs", stage="forward")
    model = Reason(ReasonKind.MODEL_ERROR, "bad config", stage="load", origin=Origin.MODEL)
    out = [
        record("org/pass-a", 1, 4000, max_abs_diff=0.0, numerics=grads),
        record("org/pass-b", 2, 700, max_abs_diff=3e-7, numerics=grads, graph_breaks=1,
               graph_break_reasons=["Dynamic shape operator\n  Explanation: Operator `aten.nonzero.default`"]),
        record("org/up", 3, 2000, "fail", fail_at="forward", blockers=[reason("unsupported_op", "aten::upsample_bilinear2d")]),
        record("org/tool", 5, 900, "fail", fail_at="compile", max_abs_diff=0.0, numerics=grads,
               blockers=[Reason(ReasonKind.LOWERING_TOOL_ERROR, "legalize", op="aten::erfinv", stage="compile")]),
        record("org/harness", 6, 300, "error", fail_at="forward", blockers=[harness]),
        record("org/model", 7, 200, "fail", fail_at="load", blockers=[model]),
        record("org/gated", 8, 10000, "skip", blockers=[reason("gated")]),
        record("org/skipped", 9, 150, "skip", blockers=[reason("input_synthesis")]),
        _died("org/crash", 10, 600, "crash", "crash", "compile"),
        _died("org/hostoom", 11, 550, "crash", "oom", "backward"),
        record("org/oom", 12, 500, "fail", fail_at="forward", blockers=[reason("oom")]),
        _died("org/slow", 13, 400, "timeout", "timeout", "backward"),
        record("org/grad-off", 14, 800, "fail", fail_at="backward", max_abs_diff=0.0,
               blockers=[Reason(ReasonKind.NUMERICS, "NumericsError: gradients: max |device - cpu| = 0.5", stage="backward")],
               numerics={**grads, "backward": {"max_abs": 0.5, "max_rel": 0.25, "within": False},
                         "over": {"stage": "backward", "tensor": "gradient", "max_abs": 0.5}}),
        record("org/out-off", 15, 650, "fail", fail_at="forward", max_abs_diff=6.25,
               blockers=[Reason(ReasonKind.NUMERICS, "NumericsError: max |device - cpu| = 6.25", stage="forward")],
               numerics={"forward": {"max_abs": 6.25, "max_rel": 0.5, "within": False},
                         "over": {"stage": "forward", "tensor": "output", "max_abs": 6.25}}),
        record("org/noisy", 16, 350, max_abs_diff=2e-5,
               numerics={**grads, "backward": {"max_abs": 0.02, "max_rel": 0.01, "within": False},
                         "within_noise": {"stage": "backward", "tensor": "gradient", "within": True}}),
        record("org/random", 17, 250, max_abs_diff=0.8,
               numerics={"forward": {"max_abs": 0.8, "max_rel": 0.4, "within": False},
                         "nondeterministic": {"max_abs": 0.7, "max_rel": 0.35, "within": False}}),
    ]  # fmt: skip
    return out


def _write(tmp_path: Path) -> tuple[Path, str]:
    folder = write_sweep(tmp_path / "out", _records(), meta(total=17))
    with open(folder / "records.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps(_schema2_longformer()) + "\n")
    return folder, write_report(folder, charts=False).read_text(encoding="utf-8")


# ---- the recomputation: pandas and the standard library only -------------------------


def _outcome(row: pd.Series) -> str:
    """The documented rule over the raw blockers: device > lowering tool > harness > model > environment."""
    if row["status"] == "pass":
        return "pass"
    blockers = row["blockers"] if isinstance(row["blockers"], list) and row["blockers"] else [row["reason"]]
    origins = {b["origin"] for b in blockers if isinstance(b, dict)}
    if row["status"] == "skip":
        return "environment" if "environment" in origins else "skip"
    return next((o for o in PRECEDENCE if o in origins), "harness")


def _stage_cells(row: pd.Series) -> dict[str, str | None]:
    """Each stage as the table counts it: oom apart, a died worker's earlier stages passed."""
    recorded = {}
    for name, result in (row["stages"] or {}).items():
        kind = (result.get("reason") or {}).get("kind")
        recorded[name] = "oom" if result["status"] in ("fail", "crash") and kind == "oom" else result["status"]
    died = (row["notes"] or {}).get("stage") if isinstance(row["notes"], dict) else None
    if died in STAGES:
        at = STAGES.index(died)
        fill = ["pass"] * at + [recorded.get(died, "fail")] + ["blocked"] * (len(STAGES) - at - 1)
        return {s: recorded.get(s) or f for s, f in zip(STAGES, fill)}
    return {s: recorded.get(s) for s in STAGES}


def _frame(folder: Path) -> pd.DataFrame:
    df = pd.read_json(folder / "records.jsonl", lines=True, dtype=False)
    df["recomputed"] = df.apply(_outcome, axis=1)
    numerics = df["numerics"].apply(lambda n: n if isinstance(n, dict) else {})
    df["over"] = numerics.apply(lambda n: (n.get("over") or {}).get("tensor"))
    df["noise"] = numerics.apply(lambda n: (n.get("within_noise") or {}).get("within") is True)
    df["random"] = numerics.apply(lambda n: "nondeterministic" in n)
    df["grad_rel"] = numerics.apply(lambda n: (n.get("backward") or {}).get("max_rel"))
    cells = pd.DataFrame(list(df.apply(_stage_cells, axis=1)))
    return pd.concat([df, cells.add_prefix("stage_")], axis=1)


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def test_report_numbers_recomputed_with_plain_pandas(tmp_path: Path) -> None:
    folder, text = _write(tmp_path)
    df = _frame(folder)
    # The field on the record and the rule over its blockers agree, for every record that has one.
    written = df[df["outcome"].notna()]
    assert (written["outcome"] == written["recomputed"]).all()
    assert df.set_index("model_id").loc["org/longformer", "recomputed"] == "device"
    outcome = df["recomputed"]
    w = df["downloads"].fillna(0)

    # Summary.
    tried = outcome.isin(["pass", "device"])
    share = f"{_pct(w[outcome == 'pass'].sum() / w.sum())}"
    assert f"**{share} of the downloads of this catalog's PyTorch-format models run end to end" in text
    passed, n_tried = int((outcome == "pass").sum()), int(tried.sum())
    to_device = df["stage_to_device"]
    reached = df[to_device.notna() & ~to_device.isin(["blocked", "skip"])]
    # Two counts of models, each named: those the device decided, of those that reached it.
    assert (f"**Device pass rate: {_pct(passed / n_tried)}** ({passed} of the {n_tried} models the device itself "
            f"decided: those that pass and those a device-origin blocker stops, of the {len(reached)} that reached it") in text
    # The plan starts where the Summary stands, over the same downloads.
    assert f"Today {share} of the PyTorch-format downloads run end to end." in text
    for key, label in LABELS.items():
        count = int((outcome == key).sum())
        assert f"| {label} | {count} | {_pct(count / len(df))} |" in text, label
    statuses = ", ".join(f"{k} {v}" for k, v in sorted(df["status"].value_counts().items()))
    assert f"Record statuses of the {len(df)} models: {statuses}." in text
    # Harness: the models with a harness blocker, and those it decides (the Outcomes row), each named.
    # (a skipped model was never tried: its harness reason is a skip's, counted under skip)
    harness_blocked = df["blockers"].apply(lambda bs: any(b.get("origin") == "harness" for b in bs or []))
    has_harness = int((harness_blocked & (df["status"] != "skip")).sum())
    assert (f"{has_harness} model(s) have at least one; for {int((outcome == 'harness').sum())} of them it decides "
            "the outcome (the *harness* row of Outcomes)") in text

    # Stages: every model that reached the device, each row adding up to them.
    n = len(reached)
    assert f"Counts (and shares) of the {n} models that reached the device" in text
    for stage in STAGES:
        values = reached[f"stage_{stage}"].fillna("not recorded")
        values = values.where(values.isin(STAGE_COLUMNS), "fail")
        counts = [int((values == c).sum()) for c in STAGE_COLUMNS]
        assert sum(counts) == n
        cells = " | ".join(f"{c} ({_pct(c / n)})" for c in counts)
        assert f"| {stage.replace('_', chr(92) + '_')} | {cells} |" in text, stage

    # Numerics, from the typed fields.
    compared = df[(df["max_abs_diff"].notna() | (df["over"] == "output")) & ~df["random"]]
    diffs = compared["max_abs_diff"]
    section = text[text.index("## Numerics"):]
    assert f"{len(compared)} models ran their forward on the device and on the CPU" in section
    # The forward's failures past the tolerance here; the gradients' apart below, each named by its stage.
    assert f"{int((diffs == 0).sum())} match bit for bit, and {int((df['over'] == 'output').sum())} fail with `numerics`" in section
    edges = [("0 (identical)", diffs == 0), ("≤ 1e-06", (diffs > 0) & (diffs <= 1e-6)),
             ("≤ 1e-05", (diffs > 1e-6) & (diffs <= 1e-5)), ("≤ 0.0001", (diffs > 1e-5) & (diffs <= 1e-4)),
             ("≤ 0.001", (diffs > 1e-4) & (diffs <= 1e-3)), ("> 0.001", diffs > 1e-3)]  # fmt: skip
    for label, inside in edges:
        assert f"| {label} | {int(inside.sum())} |" in section, label
    grads = int(df["grad_rel"].notna().sum())
    assert f"Gradients after backward: {grads} models compared with the CPU's, {int((df['over'] == 'gradient').sum())} past" in section
    assert f"{int(df['noise'].sum())} model(s) differ past the tolerance but within" in section


def test_summary_json_and_top_reasons_read_the_outcome(tmp_path: Path) -> None:
    folder, text = _write(tmp_path)
    df = _frame(folder)
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    counts = df["recomputed"].value_counts()
    blob = json.dumps(summary)
    for key in LABELS:
        assert re.search(rf'"{key}": {int(counts.get(key, 0))}\b', blob), key
    ops = (folder / "details" / "ops.md").read_text(encoding="utf-8")
    reasons = ops[ops.index("## The reason that decided each failing model"):]
    assert "lowering\\_tool\\_error" not in reasons  # the longformer counts under its device blocker
    assert "dynamic\\_shape" in reasons
