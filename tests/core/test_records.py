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
    assert rec.reason.kind is ReasonKind.UNKNOWN and rec.reason.origin is Origin.DEVICE and rec.reason.message == "m"
    assert [(b.kind, b.op, b.origin) for b in rec.blockers] == [(ReasonKind.UNSUPPORTED_OP, "aten::x", Origin.DEVICE)]
    assert list(rec.stages) == ["load"]
    assert Reason.from_dict({"kind": "oom", "origin": "nobody"}).origin is Origin.DEVICE  # the kind's own


def test_a_line_without_a_known_status_or_a_model_id_is_not_a_record():
    import pytest

    with pytest.raises(ValueError):
        ModelRecord.from_dict({"model_id": "m", "status": "sideways"})
    with pytest.raises(KeyError):
        ModelRecord.from_dict({"status": "pass"})
