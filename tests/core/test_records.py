"""Records serialise to one JSON line and back without loss."""

from __future__ import annotations

import json

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
    return rec


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
