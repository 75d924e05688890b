"""Records serialise to one JSON line and back without loss."""

from __future__ import annotations

import json

import pytest

from sweeper.records import SCHEMA_VERSION, ModelRecord, ModelRef, Reason, ReasonKind, StageResult, Status, base_record


def _record() -> ModelRecord:
    ref = ModelRef(model_id="org/m|x`y", rank=3, downloads=42, pipeline_tag="fill-mask", architecture="BertForMaskedLM")
    rec = base_record(ref, sweep_id="s1", device="trnsim", status=Status.FAIL)
    rec.stages = {
        "load": StageResult(Status.PASS, 0.5),
        "forward": StageResult(Status.FAIL, 0.1, Reason(ReasonKind.UNSUPPORTED_OP, "no kernel\nsecond line", op="aten::foo")),
        "backward": StageResult(Status.BLOCKED),
    }
    rec.reason = rec.stages["forward"].reason
    rec.blockers = [rec.reason]
    rec.fallback_ops = {"aten::bar": 3}
    return rec.settle()


def test_round_trip_is_lossless():
    rec = _record()
    line = rec.to_json()
    assert "\n" not in line
    back = ModelRecord.from_json(line)
    assert back == rec
    assert back.stages["forward"].reason.op == "aten::foo"
    assert back.status is Status.FAIL


def test_line_carries_the_contract_fields():
    data = json.loads(_record().to_json())
    for key in ("sweep_id", "model_id", "status", "stages", "reason", "fallback_ops", "graph_breaks", "versions", "repro", "schema_version"):
        assert key in data
    assert data["schema_version"] == SCHEMA_VERSION
    assert data["stages"]["forward"] == {"status": "fail", "seconds": 0.1, "reason": {"kind": "unsupported_op", "op": "aten::foo", "message": "no kernel\nsecond line", "exc_type": None, "stage": None, "origin": "device"}}


def test_key_separates_heads_of_one_model():
    a = ModelRef(model_id="zoo/bert", rank=1, architecture="BertForMaskedLM")
    b = ModelRef(model_id="zoo/bert", rank=1)
    assert a.key != b.key


def test_every_reason_kind_has_one_entry_in_the_table():
    from sweeper.records import REASON_KINDS, ReasonKind, kind_info

    assert set(REASON_KINDS) == set(ReasonKind), "a reason kind without an origin, status and softness"
    assert kind_info("no_such_kind_any_more").origin.value == "harness"


def test_a_reason_reads_its_origin_from_the_table_unless_told():
    from sweeper.records import Origin, Reason, ReasonKind

    assert Reason(ReasonKind.UNSUPPORTED_OP).origin is Origin.DEVICE
    assert Reason(ReasonKind.GATED).origin is Origin.ENVIRONMENT
    told = Reason(ReasonKind.UNSUPPORTED_OP, origin="harness", stage="forward")
    assert Reason.from_dict(told.to_dict()) == told
    old_line = {"kind": "compile_error", "op": "aten::x", "message": "m"}  # written before origins
    assert Reason.from_dict(old_line).origin is Origin.DEVICE


def test_any_schema_version_reads_through_the_contract():
    from sweeper.records import Origin

    old = {  # schema 1, hand-trimmed: no key, sweep_id or device; a kind this version does not know
        "model_id": "org/m", "status": "fail", "schema_version": 1,
        "reason": {"kind": "retired_kind", "message": "m", "origin": "device"},
        "blockers": [{"kind": "unsupported_op", "op": "aten::x"}, "not a table", None],
        "stages": {"load": {"status": "pass"}, "forward": {"status": "sideways"}, "compile": "odd"},
        "unknown_field": 1,
    }  # fmt: skip
    rec = ModelRecord.from_dict(old)
    assert (rec.key, rec.sweep_id, rec.device) == ("org/m", "", "")
    old_reason = Reason.from_dict(old["reason"])
    assert old_reason.kind is ReasonKind.UNKNOWN and old_reason.origin is Origin.DEVICE and old_reason.message == "m"
    assert rec.reason.op == "aten::x" and rec.outcome.value == "device"  # decided over its blockers on read
    assert [(b.kind, b.op, b.origin) for b in rec.blockers] == [(ReasonKind.UNSUPPORTED_OP, "aten::x", Origin.DEVICE)]
    assert list(rec.stages) == ["load"]
    assert Reason.from_dict({"kind": "oom", "origin": "nobody"}).origin is Origin.DEVICE  # the kind's own


def test_a_line_without_a_known_status_or_a_model_id_is_not_a_record():
    import pytest

    with pytest.raises(ValueError):
        ModelRecord.from_dict({"model_id": "m", "status": "sideways"})
    with pytest.raises(KeyError):
        ModelRecord.from_dict({"status": "pass"})


def _disagreeing(schema: int) -> dict:
    """A record whose first reason (lowering tool) and other blockers (device) disagree."""
    tool = {"kind": "lowering_tool_error", "op": "aten::index_put", "message": "m", "stage": "compile", "origin": "lowering_tool"}
    device = {"kind": "dynamic_shape", "op": "aten::nonzero", "message": "n", "stage": "compile", "origin": "device"}
    return {"model_id": "org/longformer", "status": "fail", "schema_version": schema, "reason": tool,
            "blockers": [tool, device, dict(device, kind="compile_error")]}


def test_the_outcome_is_decided_once_over_every_blocker():
    from sweeper.records import Outcome

    rec = ModelRecord.from_dict(_disagreeing(2))  # schema 2: upgraded on read by the same rule
    assert rec.outcome is Outcome.DEVICE
    assert (rec.reason.kind, rec.reason.op) == (ReasonKind.DYNAMIC_SHAPE, "aten::nonzero")  # the deciding blocker
    data = json.loads(rec.to_json())
    assert (data["outcome"], data["schema_version"], data["reason"]["origin"]) == ("device", SCHEMA_VERSION, "device")
    # A schema-3 line keeps the outcome it was written with: readers never re-derive it.
    kept = dict(_disagreeing(3), outcome="lowering_tool")
    assert ModelRecord.from_dict(kept).outcome is Outcome.LOWERING_TOOL


def test_outcome_rule_for_skips_and_empty_failures():
    from sweeper.records import Outcome, decide_outcome

    gated = Reason(ReasonKind.GATED, "needs a token")
    assert decide_outcome(Status.SKIP, [gated], gated) == (Outcome.ENVIRONMENT, gated)
    assert decide_outcome(Status.SKIP, [], None) == (Outcome.SKIP, None)
    assert decide_outcome(Status.ERROR, [], None) == (Outcome.HARNESS, None)
    assert decide_outcome(Status.PASS, [], None) == (Outcome.PASS, None)
    crash = Reason(ReasonKind.CRASH, "worker died", stage="forward")
    model = Reason(ReasonKind.MODEL_ERROR, "bad config", stage="load")
    rec = base_record(ModelRef("org/m", 1), sweep_id="s", device="trnsim", status=Status.FAIL, reason=model,
                      blockers=[model, crash]).settle()
    assert (rec.outcome, rec.reason, rec.status) == (Outcome.DEVICE, crash, Status.CRASH)  # status follows the reason


@pytest.mark.parametrize("report", ["top1000-trnsim", "top1000-trnsim-bf16"])
def test_the_committed_reports_load_and_each_outcome_is_the_rule_over_its_blockers(report):
    import copy
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "reports" / report / "records.jsonl"
    records = [ModelRecord.from_json(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(records) > 900 and all(r.outcome is not None for r in records)
    for record in records:
        again = copy.deepcopy(record).settle()
        assert (again.outcome, again.reason) == (record.outcome, record.reason), record.model_id
        if record.reason is not None and record.outcome.value in ("device", "lowering_tool", "harness", "model"):
            assert record.reason.origin.value == record.outcome.value, record.model_id
