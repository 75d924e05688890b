"""``sweep diff OLD NEW``: the Markdown a scheduled job posts and its exit code."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from report_factory import meta, reason, record, write_sweep
from test_report_markdown import section

from sweeper.records import StageResult, Status
from sweeper.report.commands import diff_command
from sweeper.settings.errors import UsageError

OP = "unsupported_op"


def sweeps(tmp_path: Path, *, regress: bool = True) -> tuple[Path, Path]:
    old = [
        record("a/fixed", 1, 1000, "fail", fail_at="forward", blockers=[reason(OP, "aten::x")]),
        record("a/regressed", 2, 900),
        record("a/stage", 3, 800, "fail", fail_at="compile", blockers=[reason("compile_error")]),
        record("a/gone", 4, 700),
        record("a/gated-now", 5, 600),
        record("a/other", 6, 500, "fail", fail_at="forward", blockers=[reason(OP, "aten::x")]),
    ]
    new = [
        record("a/fixed", 1, 1000),
        record("a/regressed", 2, 900, "fail", fail_at="forward", blockers=[reason(OP, "aten::y")])
        if regress
        else record("a/regressed", 2, 900),
        record("a/stage", 3, 800, "fail", fail_at="backward", blockers=[reason("numerics")])
        if regress
        else record("a/stage", 3, 800, "fail", fail_at="compile", blockers=[reason("compile_error")]),
        record("a/gated-now", 5, 600, "skip", blockers=[reason("gated")]),
        record("a/other", 6, 500, "fail", fail_at="forward", blockers=[reason(OP, "aten::z")]),
        record("a/new", 7, 100),
    ]
    return write_sweep(tmp_path / "old", old), write_sweep(tmp_path / "new", new)


def test_diff_sorts_models_into_fixed_regressed_new_gone(tmp_path: Path) -> None:
    old, new = sweeps(tmp_path)
    text, code = diff_command(old, new, fail_on_regression=False)
    assert code == 0
    assert (new / "diff.md").read_text() == text
    assert "| regressed | 2 |" in text and "| fixed | 1 |" in text
    assert "| new | 1 |" in text and "| gone | 1 |" in text
    regressed = section(text, "Regressed")
    assert "a/regressed](https://huggingface.co/a/regressed) | forward | pass | fail: unsupported\\_op `aten::y` |" in regressed
    # Still failing, but a stage that used to pass (backward) now fails: a regression.
    assert "a/stage](https://huggingface.co/a/stage) | backward | fail: compile\\_error | fail: numerics |" in regressed
    assert "a/fixed" in section(text, "Fixed")
    assert "a/new" in section(text, "New models") and "a/gone" in section(text, "Gone models")
    assert "a/other" in section(text, "Still failing, other reason")
    # Gated now is not the device's fault: listed apart, not a regression.
    assert "a/gated-now" in section(text, "Unavailable now") and "a/gated-now" not in regressed
    assert "| backward | 1 | 2 |" in section(text, "Per stage")


def test_fail_on_regression_sets_the_exit_code(tmp_path: Path) -> None:
    old, new = sweeps(tmp_path)
    assert diff_command(old, new, fail_on_regression=True)[1] == 1
    calm_old, calm_new = sweeps(tmp_path / "calm", regress=False)
    text, code = diff_command(calm_old, calm_new, fail_on_regression=True)
    assert code == 0
    assert "| regressed | 0 |" in text and "_No models._" in section(text, "Regressed")


def test_diff_warns_when_the_setups_differ(tmp_path: Path) -> None:
    old = write_sweep(tmp_path / "old", [record("m", 1, 1)], meta())
    changed = meta(device={"spec": "cuda", "profile": {"name": "p", "hash": "different"}})
    new = write_sweep(tmp_path / "new", [record("m", 1, 1)], changed)
    text, _ = diff_command(old, new, fail_on_regression=True)
    assert "The sweeps differ in device: trnsim → cuda." in text
    assert "The device profile changed: 9f3c2a1b → different." in text


def test_diff_of_a_missing_sweep_is_a_usage_error(tmp_path: Path) -> None:
    _, new = sweeps(tmp_path)
    with pytest.raises(UsageError, match="does not exist"):
        diff_command(tmp_path / "nope", new, fail_on_regression=True)


def test_golden_diff(tmp_path: Path) -> None:
    """The committed diff for fixed sweeps; refresh with SWEEPER_UPDATE_GOLDEN=1."""
    old, new = sweeps(tmp_path)
    text, _ = diff_command(old, new, fail_on_regression=False)
    text = text.replace(str(tmp_path), "TMP")  # the folders named in the header
    golden = Path(__file__).parent / "golden" / "diff.md"
    if os.environ.get("SWEEPER_UPDATE_GOLDEN"):
        golden.write_text(text, encoding="utf-8")
    assert text == golden.read_text(encoding="utf-8")


def _checked(rec, fingerprint: str, **changed: str):
    """``rec`` as a sweep writes it: its check's fingerprint and the digests of its parts."""
    parts = {"settings": "s1", "environment": "e1", "library": "l1", "model": "m1"}
    rec.notes.update(fingerprint=fingerprint, fingerprint_parts={**parts, **changed})
    return rec


def test_diff_of_two_nights_says_why_each_check_ran_again(tmp_path: Path) -> None:
    broken = {"status": "fail", "fail_at": "forward", "blockers": [reason(OP, "aten::x")]}
    old = [_checked(record("a/st", 1, 10), "f1"), _checked(record("a/bert", 2, 9), "f2"),
           _checked(record("a/flaky", 3, 8), "f3")]  # fmt: skip
    new = [
        _checked(record("a/st", 1, 10, **broken), "f1-new", library="l2"),  # its library was upgraded
        _checked(record("a/bert", 2, 9), "f2"),  # nothing changed (answered from the cache)
        _checked(record("a/flaky", 3, 8, **broken), "f3"),  # same check, another verdict
        _checked(record("a/new", 4, 1), "f4"),
    ]
    text, _ = diff_command(write_sweep(tmp_path / "old", old), write_sweep(tmp_path / "new", new), fail_on_regression=False)
    regressed = section(text, "Regressed").splitlines()
    st = next(line for line in regressed if "a/st]" in line)
    assert st.endswith("| new version of the model's library |")
    assert next(line for line in regressed if "a/flaky]" in line).endswith("| same check, new verdict |")
    why = section(text, "Why checks ran again")
    assert "| new model | 1 | 1 |" in why
    assert "| nothing (the same check) | 2 | 1 |" in why  # a/bert unchanged, a/flaky changed verdict
    assert "| new version of the model's library | 1 | 1 |" in why


def test_diff_of_sweeps_without_fingerprints_has_no_why(tmp_path: Path) -> None:
    old, new = sweeps(tmp_path)
    text, _ = diff_command(old, new, fail_on_regression=False)
    assert "Why checks ran again" not in text and "| why |" not in text


def test_a_model_that_passed_before_a_stage_existed_and_fails_it_now_regressed_there(tmp_path: Path) -> None:
    generated = {"kind": "decoder-only", "modes": ["eager", "compiled"], "eager": {"verdict": "equal"}}
    old = write_sweep(tmp_path / "old", [record("a/llm", 1, 1000, task="text-generation"),
                                         record("a/bert", 2, 900)])
    failing = record("a/llm", 1, 1000, "fail", fail_at="generate", blockers=[reason(OP, "aten::index_copy")],
                     task="text-generation", generation=generated)
    failing.stages["shapes"] = StageResult(Status.PASS, 0.1)  # nothing needs generate: shapes still ran
    new = write_sweep(tmp_path / "new", [failing, record("a/bert", 2, 900)])
    text, _ = diff_command(old, new, fail_on_regression=False)
    assert "| regressed | 1 |" in text
    assert "a/llm](https://huggingface.co/a/llm) | generate (new stage) | pass | fail: unsupported\\_op `aten::index_copy` |" \
        in section(text, "Regressed")
    assert "| generate (new stage) | 0 | 1 |" in section(text, "Per stage")
