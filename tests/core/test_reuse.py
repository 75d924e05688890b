"""Each distinct check once: fingerprints, groups, copies, infrastructure failures, cache."""

from __future__ import annotations

import json

import pytest

from sweeper.records import ModelRef, Reason, ReasonKind, Status, base_record
from sweeper.settings.config import SweepConfig
from sweeper.storage.cache import ResultCache
from sweeper.storage.fingerprint import Fingerprinter
from sweeper.storage.reuse import Reuse, copy_for

CPU = {"spec": "cpu", "profile": {}}


def _ref(model_id: str, rank: int, **kw) -> ModelRef:
    kw.setdefault("model_type", "bert")
    kw.setdefault("source", "catalog")
    return ModelRef(model_id=model_id, rank=rank, downloads=1000 - rank, pipeline_tag=kw.pop("tag", "fill-mask"), **kw)


def _fp(cfg: SweepConfig = SweepConfig(), device: dict = CPU, *, offline: bool = True) -> Fingerprinter:
    return Fingerprinter(cfg, device, offline=offline)


def test_offline_defaults_of_one_type_and_task_share_a_fingerprint():
    fp = _fp()
    a, b = _ref("org/a", 1), _ref("org/b", 2, tag="fill-mask", library_name="transformers")
    assert fp(a) == fp(b)  # a listing that names no library is built by transformers
    # A task asking for another head, another type, another architecture: another check.
    assert fp(a) != fp(_ref("org/c", 3, tag="text-classification"))
    assert fp(a) != fp(_ref("org/d", 4, model_type="roberta"))
    assert fp(a) != fp(_ref("org/e", 5, architecture="BertModel"))


def test_refs_whose_configs_differ_never_share():
    fp = _fp()
    small = _ref("org/a", 1, config={"model_type": "bert", "hidden_size": 64})
    large = _ref("org/b", 2, config={"model_type": "bert", "hidden_size": 128})
    same = _ref("org/c", 3, config={"hidden_size": 64, "model_type": "bert"})
    assert fp(small) != fp(large)
    assert fp(small) == fp(same)  # key order does not matter
    assert fp(small) != fp(_ref("org/d", 4))  # the ref's own config is not the default


def test_a_reachable_hub_or_pretrained_weights_make_every_model_its_own_check():
    online = _fp(offline=False)
    assert online(_ref("org/a", 1)) != online(_ref("org/b", 2))
    pretrained = _fp(SweepConfig.of(weights="pretrained"))
    assert pretrained(_ref("org/a", 1)) != pretrained(_ref("org/b", 2))
    # Offline, every model without a type and a cached config fails the same way (its copy
    # names itself); online, each is its own check again.
    fp = _fp()
    assert fp(_ref("org/a", 1, model_type=None)) == fp(_ref("org/b", 2, model_type=None))
    assert fp(_ref("org/a", 1, model_type=None)) != online(_ref("org/a", 1, model_type=None))
    assert fp.cacheable(_ref("org/a", 1, model_type=None)) and not online.cacheable(_ref("org/a", 1, model_type=None))


def test_unsupported_library_is_one_check_per_library():
    fp = _fp()
    assert fp(_ref("x/a", 1, library_name="flair", model_type=None)) == fp(_ref("x/b", 2, library_name="flair"))
    assert fp(_ref("x/a", 1, library_name="flair")) != fp(_ref("x/c", 3, library_name="ultralytics"))
    assert fp.cacheable(_ref("x/a", 1, library_name="flair", model_type=None))  # kept across sweeps


def test_a_library_that_builds_from_the_id_is_one_check_per_repo_and_cacheable():
    fp = _fp()
    assert fp(_ref("timm/resnet18.a1_in1k", 1, library_name="timm")) != fp(_ref("timm/vit_base_patch16_224.augreg_in21k", 2, library_name="timm"))
    assert fp.cacheable(_ref("timm/resnet18.a1_in1k", 1, library_name="timm", model_type=None))


@pytest.mark.parametrize(
    "change, shares",
    [
        ({"seed": 1}, False), ({"dtype": "bfloat16"}, False), ({"stages": ("load", "forward")}, False),
        ({"collect_all": True}, False), ({"compile_backend": "aot_eager"}, False), ({"retie_weights": True}, False),
        ({"device": "trnsim"}, False), ({"timeout": 10.0}, False),
        ({"workers": 7}, True), ({"top": 3}, True), ({"executor": "inline"}, True), ({"reuse": False}, True),
    ],
)  # fmt: skip
def test_settings_that_decide_an_outcome_are_in_the_fingerprint(change, shares):
    ref = _ref("org/a", 1)
    assert (_fp()(ref) == _fp(SweepConfig().replace(**change))(ref)) is shares


def _upgraded(monkeypatch, package: str) -> Fingerprinter:
    from sweeper.checks import versions

    real = versions.package_version
    monkeypatch.setattr(versions, "package_version", lambda name: "99.0" if name == package else real(name))
    return _fp()


LIBRARY_REFS = {
    "transformers": _ref("org/bert", 1, library_name="transformers"),
    "unnamed": _ref("org/bert-2", 2),
    "sentence-transformers": _ref("org/st", 3, library_name="sentence-transformers"),
    "timm": _ref("org/vit", 4, library_name="timm", model_type=None),
    "open_clip": _ref("org/clip", 5, library_name="open_clip", model_type=None),
    "flair": _ref("org/ner", 6, library_name="flair", model_type=None),
}


@pytest.mark.parametrize(
    "package, changed",
    [
        ("sentence-transformers", {"sentence-transformers"}),
        ("timm", {"timm", "open_clip"}),  # open_clip builds on timm
        ("tokenizers", {"transformers", "unnamed", "sentence-transformers"}),
        ("flair", {"flair"}),  # a library missing from the table: its own package
        ("torch", set(LIBRARY_REFS)),  # everyone's
    ],
)
def test_a_package_upgrade_changes_only_the_fingerprints_of_the_libraries_using_it(monkeypatch, package, changed):
    before = {name: _fp()(ref) for name, ref in LIBRARY_REFS.items()}
    upgraded = _upgraded(monkeypatch, package)
    after = {name: upgraded(ref) for name, ref in LIBRARY_REFS.items()}
    assert {name for name in LIBRARY_REFS if before[name] != after[name]} == changed


def test_the_fingerprint_parts_say_which_part_changed(monkeypatch):
    ref = LIBRARY_REFS["sentence-transformers"]
    before = _fp().parts(ref)
    assert {k for k, v in _fp(SweepConfig.of(seed=3)).parts(ref).items() if before[k] != v} == {"settings"}
    after = _upgraded(monkeypatch, "sentence-transformers").parts(ref)
    assert {k for k in before if before[k] != after[k]} == {"library"}


def test_a_quantized_repo_is_never_answered_by_its_float_architecture_or_another_method():
    fp = _fp()
    plain = _ref("Qwen/Qwen2.5-7B-Instruct", 1, model_type="qwen2", tag="text-generation")
    bnb = _ref("unsloth/Qwen2.5-7B-Instruct-bnb-4bit", 2, model_type="qwen2", tag="text-generation")
    bnb_too = _ref("unsloth/Qwen2.5-7B-Instruct-unsloth-bnb-4bit", 3, model_type="qwen2", tag="text-generation")
    gptq = _ref("Qwen/Qwen2.5-32B-Instruct-GPTQ-Int4", 4, model_type="qwen2", tag="text-generation")
    assert len({fp(plain), fp(bnb), fp(gptq)}) == 3
    assert fp(bnb) == fp(bnb_too)  # one method, one build: one check
    flux, nf4 = _ref("black-forest-labs/FLUX.1-dev", 5, library_name="diffusers"), _ref("sayakpaul/flux.1-dev-nf4", 6, library_name="diffusers")
    assert fp(flux) != fp(nf4)


def test_a_sentence_transformers_model_is_not_answered_by_a_transformers_one():
    fp = _fp()
    assert fp(_ref("org/a", 1)) != fp(_ref("org/b", 2, library_name="sentence-transformers"))


def test_a_new_device_profile_is_a_new_check():
    ref = _ref("org/a", 1)
    one = _fp(device={"spec": "trnsim", "profile": {"name": "p", "hash": "1"}})
    two = _fp(device={"spec": "trnsim", "profile": {"name": "p", "hash": "2"}})
    assert one(ref) != two(ref)


def _record(ref: ModelRef, status: Status = Status.PASS, **notes):
    rec = base_record(ref, sweep_id="s1", device="cpu", status=status)
    rec.architecture = "BertForMaskedLM"
    rec.seconds = 3.0
    rec.notes.update(notes)
    return rec


def _reuse(**kw) -> Reuse:
    return Reuse(lambda ref: ref.model_type or ref.model_id, repro=lambda ref: f"sweep one {ref.model_id}", **kw)


def test_one_representative_per_group_and_copies_with_their_own_identity():
    refs = [_ref("org/a", 1), _ref("org/b", 2), _ref("org/c", 3, model_type="gpt2"), _ref("org/d", 4)]
    reuse = _reuse()
    run, ready = reuse.plan(refs)
    assert [r.model_id for r in run] == ["org/a", "org/c"] and ready == []
    rep = _record(refs[0], Status.FAIL)
    rep.reason = Reason(ReasonKind.REMOTE_CODE, "org/a ships its own code")
    rep.blockers = [rep.reason]
    out = reuse.settle(rep)
    assert [r.model_id for r in out] == ["org/a", "org/b", "org/d"]
    copy = out[2]
    assert (copy.key, copy.rank, copy.downloads, copy.repro) == ("org/d", 4, 996, "sweep one org/d")
    assert copy.reused_from == "org/a" and out[0].reused_from is None
    assert copy.status is Status.FAIL and copy.architecture == "BertForMaskedLM" and copy.seconds == 0.0
    assert copy.reason.message == "org/d ships its own code"  # messages name the model itself
    assert copy.notes["fingerprint"] == out[0].notes["fingerprint"] == "bert"
    assert [r.model_id for r in reuse.settle(_record(refs[2]))] == ["org/c"]  # a group of one
    assert reuse.next_round() == []


def test_an_infrastructure_failure_answers_for_nobody_the_next_ref_runs():
    refs = [_ref("org/a", 1), _ref("org/b", 2), _ref("org/c", 3)]
    reuse = _reuse()
    reuse.plan(refs)
    lost = _record(refs[0], Status.ERROR, infrastructure=True)
    assert reuse.settle(lost) == [lost]
    again = reuse.next_round()
    assert [r.model_id for r in again] == ["org/b"]
    out = reuse.settle(_record(again[0], Status.CRASH))  # a crash of the model itself is shared
    assert [(r.model_id, r.reused_from) for r in out] == [("org/b", None), ("org/c", "org/b")]
    assert reuse.next_round() == []


def test_resume_copies_from_records_already_written():
    done = _record(_ref("org/a", 1), fingerprint="bert")
    reuse = _reuse(known=[done])
    run, ready = reuse.plan([_ref("org/b", 2), _ref("org/c", 3, model_type="gpt2")])
    assert [r.model_id for r in run] == ["org/c"]
    assert [(r.model_id, r.reused_from) for r in ready] == [("org/b", "org/a")]


def test_no_reuse_runs_everything_but_still_fingerprints():
    refs = [_ref("org/a", 1), _ref("org/b", 2)]
    reuse = _reuse(enabled=False)
    run, _ = reuse.plan(refs)
    assert run == refs
    assert [r.notes["fingerprint"] for r in reuse.settle(_record(refs[1]))] == ["bert"]


def test_cache_answers_the_next_sweep_and_skips_timeouts(tmp_path):
    first = _reuse(cache=ResultCache(tmp_path))
    first.plan([_ref("org/a", 1), _ref("org/t", 2, model_type="slow")])
    first.settle(_record(_ref("org/a", 1)))
    first.settle(_record(_ref("org/t", 2, model_type="slow"), Status.TIMEOUT))
    nightly = _reuse(cache=ResultCache(tmp_path))
    run, ready = nightly.plan([_ref("org/a", 1), _ref("org/new", 3), _ref("org/t", 4, model_type="slow")])
    assert [r.model_id for r in run] == ["org/t"]
    assert [(r.model_id, r.reused_from, r.notes["cached_from_sweep"]) for r in ready] == [
        ("org/a", "org/a", "s1"), ("org/new", "org/a", "s1")]  # fmt: skip


def test_copy_of_a_copy_names_the_model_that_ran():
    rec = _record(_ref("org/a", 1))
    second = copy_for(copy_for(rec, _ref("org/b", 2), repro=""), _ref("org/c", 3), repro="")
    assert second.reused_from == "org/a" and second.model_id == "org/c"


def test_a_copy_writes_the_same_line_as_a_record_built_field_by_field(monkeypatch):
    from sweeper.records import ModelRecord

    monkeypatch.setenv("SOME_API_TOKEN", "sekrit-value-123")
    rec = _record(_ref("org/a", 1), Status.FAIL, fingerprint="bert", infra_retries=1)
    rec.reason = Reason(kind=ReasonKind.UNSUPPORTED_OP, op="aten::roll", message="roll is not on the device")
    rec.numerics = {"forward": {"max_abs": 0.5}}
    reuse = _reuse(known=[rec])
    _, ready = reuse.plan([_ref("org/b", 2, revision="sekrit-value-123"), _ref("org/c", 3)])
    for copy in ready:
        copy.sweep_id = "s2"
        assert json.loads(copy.to_json()) == ModelRecord.to_dict(copy)
    assert json.loads(ready[0].to_json())["revision"] == "***"  # a copy's own fields are redacted too
    assert "infra_retries" not in ready[0].notes and rec.notes["infra_retries"] == 1
    # The copies share one serialised outcome: the second is not converted again.
    assert ready[0]._outcome is ready[1]._outcome is not None


def test_answered_models_are_handed_out_in_chunks_while_the_refs_are_read():
    known = _record(_ref("org/a", 1), fingerprint="bert")
    reuse = _reuse(known=[known])
    emitted: list[list[str]] = []
    read: list[str] = []

    def refs():
        for i in range(5):
            ref = _ref(f"org/b{i}", i + 2)
            read.append(ref.model_id)
            yield ref
        yield _ref("org/gpt", 9, model_type="gpt2")

    run = reuse.plan_into(refs(), lambda records: emitted.append([(r.model_id, len(read)) for r in records]), chunk=2)
    assert [r.model_id for r in run] == ["org/gpt"]
    # Written two at a time as the refs arrive, not all at the end.
    assert emitted == [[("org/b0", 2), ("org/b1", 2)], [("org/b2", 4), ("org/b3", 4)], [("org/b4", 5)]]
    assert reuse.planned == 6 and list(reuse.fp_of) == ["org/gpt"]  # only the check in flight is held


def test_sentence_models_of_one_type_share_a_check_only_when_they_pool_alike():
    fp = _fp()
    cls_pooled = fp(_ref("BAAI/bge-small-en-v1.5", 1, library_name="sentence-transformers"))
    mean_pooled = fp(_ref("sentence-transformers/all-MiniLM-L6-v2", 2, library_name="sentence-transformers"))
    also_mean = fp(_ref("sentence-transformers/all-MiniLM-L12-v2", 3, library_name="sentence-transformers"))
    assert cls_pooled != mean_pooled
    assert mean_pooled == also_mean
