"""report.md as a reader sees it: headline figures, sections apart, roadmap, escaping."""

from __future__ import annotations

import re
from pathlib import Path

from report_factory import meta, reason, record, write_sweep

from sweeper.report.commands import write_report


def sweep_records() -> list:
    """A small sweep with every kind of outcome."""
    return [
        record("org/pass-a", 1, 4000, max_abs_diff=0.0),
        record("org/up", 2, 2000, "fail", fail_at="forward", model_type="vit", task="image-classification",
               blockers=[reason("unsupported_op", "aten::upsample_bilinear2d")]),
        record("org/up-lstm", 3, 1500, "fail", fail_at="forward",
               blockers=[reason("unsupported_op", "aten::upsample_bilinear2d"),
                         reason("unsupported_op", "aten::_thnn_fused_lstm_cell")]),
        record("org/lstm-dtype", 4, 1000, "fail", fail_at="forward",
               blockers=[reason("unsupported_op", "aten::_thnn_fused_lstm_cell"), reason("unsupported_dtype")]),
        record("org/gated", 5, 10000, "skip", blockers=[reason("gated")]),
        record("org/remote", 6, 500, "error", blockers=[reason("remote_code")]),
        record("org/skipped", 7, 300, "skip", blockers=[reason("input_synthesis")]),
        record("org/pass-b", 8, 700, fallback_ops={"aten::nonzero": 4}, max_abs_diff=3e-7),
        record("org/breaks", 9, 100, "fail", fail_at="compile", blockers=[reason("graph_break", None, "b")],
               graph_breaks=1, graph_break_reasons=["data-dependent op nonzero"], max_abs_diff=2e-5),
    ]  # fmt: skip


def section(text: str, title: str) -> str:
    """The body of one ``## title`` section."""
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else None]


def report_for(tmp_path: Path, records: list, sweep: dict | None = None) -> str:
    write_sweep(tmp_path / "out", records, sweep)
    return write_report(tmp_path / "out", charts=False).read_text()


def page(tmp_path: Path, name: str) -> str:
    """A detail page report.md links to (``details/NAME.md``)."""
    return (tmp_path / "out" / "details" / f"{name}.md").read_text()


def test_headline_counts_only_models_tried_on_the_device(tmp_path: Path) -> None:
    text = report_for(tmp_path, sweep_records())
    # 4,700 of 20,100 downloads pass; gated/remote/skipped (10,800) are not device failures.
    assert "**23.4% of the downloads of this catalog's PyTorch-format models run end to end on trnsim**." in text
    assert ("**Device pass rate: 33.3%** (2 of the 6 models the device itself decided: those that pass and those a "
            "device-origin blocker stops, of the 6 that reached it;") in text
    not_device = section(text, "Not device failures")
    assert "| environment | gated | 1 | 10.0k |" in not_device
    assert "| environment | remote\\_code | 1 | 500 |" in not_device
    assert "| skip | input\\_synthesis | 1 | 300 |" in not_device
    reasons = page(tmp_path, "ops").split("## The reason that decided each failing model", 1)[1]
    assert "gated" not in reasons and "remote" not in reasons


def test_fix_next_frees_models_in_order_and_the_ops_page_ranks_what_each_op_touches(tmp_path: Path) -> None:
    text = report_for(tmp_path, sweep_records())
    plan = section(text, "Fix next")
    assert "| 1 | lower `aten::upsample_bilinear2d` (+ backward) | device | 1 | 2.0k | 33.3% | — |" in plan
    # The lstm cell alone frees up-lstm (1,500); lstm-dtype needs its dtype too: a third step.
    assert "| 2 | lower `aten::_thnn_fused_lstm_cell` (+ backward) | device | 1 | 1.5k | 40.8% | — |" in plan
    assert "| 3 | dtype `unknown` on the device | device | 1 | 1.0k | 45.8% | — |" in plan
    assert "Today 23.4% of the PyTorch-format downloads run end to end" in plan  # the Summary's figure
    assert "Fixing every cause reaches at most 45.8% (3 more models)." in plan
    ops = page(tmp_path, "ops")
    assert "how much each op touches, not the fix order" in ops
    rows = [line for line in ops.splitlines() if line.startswith(("| 1 ", "| 2 "))]
    assert rows[0].startswith("| 1 | `aten::upsample_bilinear2d` | unsupported\\_op | 2 | 3.5k | 1 | 2.0k |")
    # Blocks 2,500 downloads but frees none alone: its only other model also needs a dtype.
    assert rows[1].startswith("| 2 | `aten::_thnn_fused_lstm_cell` | unsupported\\_op | 2 | 2.5k | 0 | 0 |")
    per_op = ops[ops.index("## Models per op") :]
    assert "<summary>2 models blocked by <code>aten::_thnn_fused_lstm_cell</code></summary>" in per_op
    assert "| [org/up](../https://huggingface.co/org/up) |" not in per_op
    assert "| [org/up](https://huggingface.co/org/up) | 2.0k | none: lowering it makes this model pass |" in per_op
    assert "| [org/lstm-dtype](https://huggingface.co/org/lstm-dtype) | 1.0k | unsupported\\_dtype |" in per_op


def test_fallbacks_breaks_and_breakdowns(tmp_path: Path) -> None:
    text = report_for(tmp_path, sweep_records())
    assert "| `aten::nonzero` | 1 | 700 | 4 | [org/pass-b](https://huggingface.co/org/pass-b) |" in text
    assert "| data-dependent op nonzero | 1 | 0 | 100 |" in section(text, "Graph breaks")
    assert "| vit | 1 | 1 | 0 | 0.0% | 2.0k | 0.0% | 0 | 1 | 0.0% |" in page(tmp_path, "model-types")
    assert "| image-classification | 1 | 1 | 0 | 0.0% |" in page(tmp_path, "tasks")
    assert "[By model type](details/model-types.md)" in section(text, "More")


def test_model_table_marks_stages_and_repro(tmp_path: Path) -> None:
    text = report_for(tmp_path, sweep_records())
    more = section(text, "More")
    assert "[index.html](index.html): all 9 models, searchable by id, model type or op" in more
    assert "[records.parquet](records.parquet)" in more
    assert "[Failing models](details/failing-models.md)" in more
    models = page(tmp_path, "failing-models")
    assert "org/pass-a" not in models and "org/gated" not in models  # failures only
    row = next(line for line in models.splitlines() if "org/up-lstm" in line and line.startswith("| 3 "))
    assert "| ✅ | ✅ | ❌ | ⛔ | ⛔ | ⛔ | fail |" in row  # load, to_device, forward, backward, compile, shapes
    assert row.endswith("| `sweep one org/up-lstm --device trnsim --weights tiny` |")


def cells(line: str) -> int:
    """Cells of a table row as GFM splits it (an escaped pipe does not split)."""
    return len(re.findall(r"(?<!\\)\|", line)) - 1


def test_hostile_ids_and_messages_cannot_break_the_markdown(tmp_path: Path) -> None:
    nasty = "a|b`c<script>alert(1)</script>\n## injected\r\n[x](javascript:y) $x$ *e*"
    recs = [
        record("org/ok", 1, 10),
        record("evil|id`<img src=x>", 2, 5, "fail", fail_at="forward",
               blockers=[reason("unsupported_op", "aten::x|`y`", nasty)], graph_break_reasons=[nasty]),
    ]  # fmt: skip
    report = report_for(tmp_path, recs)
    pages = sorted((tmp_path / "out" / "details").glob("*.md"))
    assert len(pages) == 11  # every page but formats.md (no such repo) and generation.md (no model generates)
    text = "\n\n".join([report, *(p.read_text() for p in pages)])  # report.md and every page it links
    assert "<script>" not in text and "<img" not in text
    assert "\n## injected" not in text
    assert "[x](javascript:" not in text and "\\[x\\](javascript:y)" in text
    for block in re.split(r"\n\s*\n", text):
        rows = [line for line in block.splitlines() if line.startswith("|")]
        if rows:
            assert len({cells(r) for r in rows}) == 1, rows


def test_without_downloads_weighted_figures_are_omitted(tmp_path: Path) -> None:
    recs = [record("bert", 1, None), record("lstm", 2, None, "fail", fail_at="forward",
                                              blockers=[reason("unsupported_op", "aten::lstm")])]  # fmt: skip
    recs[0].key, recs[0].architecture = "bert::BertForMaskedLM", "BertForMaskedLM"
    text = report_for(tmp_path, recs, meta(source={"name": "zoo"}))
    assert "download-weighted figures are omitted" in text
    assert "catalog's downloads" not in text
    assert "downloads" not in section(text, "Fix next").split("\n\n", 2)[2]  # the table: models only
    assert "the most models pass" in section(text, "Fix next")
    assert "| 1 | lower `aten::lstm` (+ backward) | device | 1 | 100.0% | — |" in text
    assert "**Device pass rate: 50.0%**" in text
    assert "huggingface.co" not in text  # zoo ids are not Hub repos
    assert "| 2 | lstm | ✅ | ✅ | ❌ |" in page(tmp_path, "failing-models")


def test_notes_for_unfinished_sweep_and_first_blocker_only(tmp_path: Path) -> None:
    sweep = meta(config={"stages": ["load", "forward"], "collect_all": False})
    del sweep["ended"]
    text = report_for(tmp_path, [record("m", 1, 1, stages=["load", "forward"])], sweep)
    assert "The sweep did not finish" in text
    assert "roadmap figures of what one op frees are upper bounds" in text
    assert "| load | 1 (100.0%) | 0 (0.0%) | 0 (0.0%) | 0 (0.0%) | 0 (0.0%) |" in text
    assert "| backward |" not in text


def test_large_sweeps_list_only_the_first_failing_models(tmp_path: Path) -> None:
    recs = [record(f"org/m{i}", i, 10_000 - i, *(("fail",) if i % 2 else ()), fail_at="forward" if i % 2 else None,
                   blockers=[reason("oom")] if i % 2 else None) for i in range(1, 300)]  # fmt: skip
    text = report_for(tmp_path, recs)
    assert "org/m199" not in text  # report.md names no failing model beyond its examples
    models = page(tmp_path, "failing-models")
    assert "org/m199" in models and "org/m201" in models and "org/m2]" not in models  # every failing one
    assert "all 299 models" in section(text, "More")


OVER_OUTPUT = {"over": {"stage": "forward", "tensor": "output"}}  # the record's typed field


def test_numerics_spread_and_the_models_furthest_off(tmp_path: Path) -> None:
    records = [
        record("org/exact", 1, 1000, max_abs_diff=0.0),
        record("org/close", 2, 800, max_abs_diff=4e-7),
        record("org/a|b", 3, 600, "fail", fail_at="forward", max_abs_diff=6.25, numerics=OVER_OUTPUT,
               blockers=[reason("numerics", None, "max |device - cpu| = 6.25 exceeds 0.001 x 4.2")]),
        # A non-finite output has no difference to place: its own bucket, listed first.
        record("org/nan", 4, 400, "fail", fail_at="forward", max_abs_diff=float("nan"), numerics=OVER_OUTPUT,
               blockers=[reason("numerics", None, "max |device - cpu| = nan exceeds 0.001 x inf")]),
        record("org/none", 5, 200, "fail", fail_at="load", blockers=[reason("model_error")]),
    ]  # fmt: skip
    text = section(report_for(tmp_path, records, {"config": {"atol": 0.001}}), "Numerics")
    assert "4 models ran their forward on the device and on the CPU" in text
    assert "1 match bit for bit, and 2 fail with `numerics`" in text
    assert "| 0 (identical) | 1 | 1.0k |" in text and "| ≤ 1e-06 | 1 | 800 |" in text
    assert "| > 0.001 | 1 | 600 |" in text and "| not finite | 1 | 400 |" in text
    largest = text[text.index("The largest differences"):].splitlines()
    rows = [line for line in largest if line.startswith("| ") and "org/" in line]
    assert rows[0].startswith("| [org/nan]") and "| not finite | over tolerance |" in rows[0]
    # No Hub link for an id that is not a Hub id; its pipe escaped, so the row keeps 4 cells.
    assert rows[1] == "| org/a\\|b | 600 | 6.25 | over tolerance |"
    assert len(rows) == 3 and rows[2].startswith("| [org/close]")


def test_numerics_shows_gradients_and_nondeterministic_models_apart(tmp_path: Path) -> None:
    grads = {"forward": {"max_abs": 0.0, "max_rel": 0.0, "within": True},
             "backward": {"max_abs": 1e-7, "max_rel": 3e-7, "within": True}}
    records = [
        record("org/exact", 1, 1000, max_abs_diff=0.0, numerics=grads),
        record("org/grad-off", 2, 800, "fail", fail_at="backward", max_abs_diff=0.0,
               # As records write it: the message does not start with "gradients"; the typed field says so.
               blockers=[reason("numerics", None, "NumericsError: gradients: max |device - cpu| = 0.5 exceeds 0.001")],
               numerics={**grads, "backward": {"max_abs": 0.5, "max_rel": 0.25, "within": False},
                         "over": {"stage": "backward", "tensor": "gradient", "max_abs": 0.5}}),
        # Its CPU runs differ: over tolerance on the device, yet passing and not in the spread.
        record("org/vilt", 3, 600, max_abs_diff=0.8,
               numerics={"forward": {"max_abs": 0.8, "max_rel": 0.4, "within": False},
                         "nondeterministic": {"max_abs": 0.7, "max_rel": 0.35, "within": False}}),
    ]  # fmt: skip
    text = section(report_for(tmp_path, records, {"config": {"atol": 0.001, "dtype": "bfloat16"}}), "Numerics")
    assert "2 models ran their forward on the device and on the CPU" in text
    assert "(atol 0.01, rtol 0.03 × the output's scale, bfloat16)" in text
    assert "| > 0.001 | 0 | 0 |" in text
    assert ("Gradients after backward: 2 models compared with the CPU's, 1 past the tolerance and fail with "
            "`numerics` on the backward stage; the largest relative difference is 0.25 ([org/grad-off]") in text
    assert "1 nondeterministic models: two CPU runs differ past the tolerance" in text
    assert "| [org/vilt](https://huggingface.co/org/vilt) | 600 | 0.8 | 0.7 |" in text


def test_report_and_page_show_the_same_sweep_header(tmp_path: Path) -> None:
    """One set of header rows: report.md sets them in a table, index.html as text."""
    from sweeper.report.analysis import analyse
    from sweeper.report.load import read_sweep
    from sweeper.report.page_data import header_rows

    sweep = meta(config={"stages": ["load", "forward"], "collect_all": True})  # no weights or dtype: the records say
    text = report_for(tmp_path, sweep_records(), sweep)
    rows = dict(header_rows(analyse(read_sweep(tmp_path / "out"))))
    assert rows["weights"] == "tiny" and rows["dtype"] == "float32" and rows["wall time"] == "42 min 00 s"
    assert rows["versions"] == "sweeper 0.1.0, torch 2.13.0, transformers 5.24.0"
    for label, value in rows.items():
        shown = f"`{value}`" if label in ("sweep", "device") else value
        assert f"| **{label}** | {shown} |" in text, label


def test_graph_breaks_are_ranked_by_cause_across_models(tmp_path: Path) -> None:
    """Dynamo's reasons differ per model (hints, file names); the table groups them by cause
    and puts the cause breaking the most models first, passing models included."""
    dynamo = ("Dynamic shape operator\n  Explanation: Operator `aten.nonzero.default`'s output shape depends on input "
              "Tensor data.\n  Hint: Enable tracing ... File \"{}\", line 3")  # fmt: skip
    records = [
        record(f"org/speech-{i}", i, 100 * i, graph_breaks=2,
               graph_break_reasons=[dynamo.format(f"m{i}.py"), "Unsupported Tensor.item() call with capture_scalar_outputs=False"])
        for i in (1, 2, 3)
    ] + [record("org/big", 4, 9000, graph_breaks=1, graph_break_reasons=["Unsupported Tensor.item() call with "
                                                                         "capture_scalar_outputs=False"]),
         record("org/odd", 5, 99999, graph_breaks=1, graph_break_reasons=["call to a builtin"])]  # fmt: skip
    rows = [line for line in section(report_for(tmp_path, records), "Graph breaks").splitlines() if line.startswith("| ")]
    assert rows[0] == "| cause | models | passing | downloads | examples |"
    assert rows[2].startswith(r"| Unsupported Tensor.item() call with capture\_scalar\_outputs=False | 4 | 4 |")
    assert rows[3].startswith("| Dynamic shape operator (aten::nonzero) | 3 | 3 | 600 |")
    assert rows[4].startswith("| call to a builtin | 1 | 1 |")
