"""The comparison arithmetic: tolerances per dtype, gradient diffs, the float32 yardstick."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from sweeper.checks import numerics
from sweeper.checks.numerics import Tolerance, compare, compare_grads, cpu_twin, format_error, seeded, tolerance_for
from sweeper.libraries.transformers.inputs import cast_floating


def test_float32_keeps_the_sweep_atol_and_bfloat16_is_looser():
    assert tolerance_for("float32", atol=1e-3) == Tolerance(1e-3, 1e-3)
    bf16 = tolerance_for("bfloat16", atol=1e-3)
    assert bf16.rtol > 1e-2 and bf16.atol >= 1e-3
    # The sweep's setting is a floor for every dtype.
    assert tolerance_for("bfloat16", atol=0.5) == Tolerance(0.5, 0.5)


def test_compare_is_relative_to_the_largest_reference_magnitude():
    ref = torch.tensor([100.0, 1.0])
    diff = compare(ref + torch.tensor([0.05, 0.0]), ref, Tolerance(1e-3, 1e-3))
    assert diff.max_abs == pytest.approx(0.05, rel=1e-4) and diff.max_rel == pytest.approx(5e-4, rel=1e-3)
    assert diff.within  # 0.05 <= 1e-3 x 100
    assert not compare(ref + 1, ref, Tolerance(1e-3, 1e-3)).within
    nan = compare(torch.tensor([float("nan"), 1.0]), ref, Tolerance(1e-3, 1e-3))
    assert not nan.within
    masked = torch.tensor([float("-inf"), 2.0])
    assert compare(torch.tensor([float("-inf"), 2.0005]), masked, Tolerance(1e-3, 1e-3)).within
    assert not compare(torch.tensor([-1e9, 2.0]), masked, Tolerance(1e-3, 1e-3)).within


@pytest.mark.parametrize(("got", "ref", "expected"), [
    ([1.0, 2.0], [1.0, 2.0], (0.0, 0.0, True)),  # bit-equal
    ([1.0, 2.001], [1.0, 2.0], (0.001, 0.0005, True)),  # finite everywhere
    ([1.0, 2.1], [1.0, 2.0], (0.1, 0.05, False)),
    ([0.0, 0.0], [0.0, 0.0], (0.0, 0.0, True)),
    ([1e-4, 0.0], [0.0, 0.0], (1e-4, float("inf"), True)),  # zero reference: atol decides
    ([float("nan"), 2.0], [float("nan"), 2.0], (0.0, 0.0, True)),  # NaN on both sides
    ([float("-inf"), 2.5], [float("-inf"), 2.0], (0.5, 0.25, False)),  # masked logits, finite rest
    ([float("inf"), 2.0], [float("-inf"), 2.0], (float("inf"), float("inf"), False)),
    ([float("nan"), 2.0], [1.0, 2.0], (float("nan"), float("nan"), False)),
])
def test_compare_gives_the_element_by_element_answer_on_every_kind_of_result(got, ref, expected):
    diff = compare(torch.tensor(got), torch.tensor(ref), Tolerance(1e-3, 1e-3))
    max_abs, max_rel, within = expected
    assert diff.within is within
    for value, want in ((diff.max_abs, max_abs), (diff.max_rel, max_rel)):
        if np.isnan(want):
            assert np.isnan(value)
        else:
            assert value == pytest.approx(want, rel=1e-3)


def test_gradients_are_judged_per_tensor_and_name_the_worst():
    ref = {"big": torch.ones(4), "small": torch.full((4,), 1e-3), "vanishing": torch.zeros(2)}
    noise = {"big": ref["big"], "small": ref["small"], "vanishing": torch.full((2,), 1e-5)}
    assert compare_grads(noise, ref, Tolerance(1e-3, 1e-3)).within  # 1e-5 against the model's scale
    wrong = {**ref, "small": ref["small"] * 2}
    diff = compare_grads(wrong, ref, Tolerance(1e-4, 1e-3))
    assert not diff.within and diff.where == "small"
    assert diff.max_rel == pytest.approx(1e-3, rel=1e-3)  # relative to the largest gradient
    assert compare_grads({"other": torch.ones(1)}, ref, Tolerance(1e-3, 1e-3)) is None


def _tensor_by_tensor(got, ref, tol):
    """compare_grads' answer spelled out with ``compare``, one tensor at a time."""
    names = [n for n in ref if n in got and got[n].shape == ref[n].shape]
    scale = max(float(ref[n].float().abs().max()) if ref[n].numel() else 0.0 for n in names)
    diffs = {n: compare(got[n], ref[n], Tolerance(tol.atol * scale, tol.rtol)) for n in names}
    order = lambda v: float("inf") if np.isnan(v) else v  # noqa: E731
    worst = max(names, key=lambda n: (not diffs[n].within, order(diffs[n].max_abs)))
    return max(order(d.max_abs) for d in diffs.values()), all(d.within for d in diffs.values()), worst


@pytest.mark.parametrize("batch", [1 << 20, 7])  # one batch; many, with tensors split across none
def test_gradients_get_the_figures_a_tensor_by_tensor_comparison_gives(monkeypatch, batch):
    monkeypatch.setattr(numerics, "_BATCH_ELEMENTS", batch)
    gen = torch.Generator().manual_seed(0)
    ref = {f"p{i}": torch.randn(int(torch.randint(0, 12, (1,), generator=gen)), generator=gen) for i in range(40)}
    ref["wide"] = torch.randn(3, 5, generator=gen, dtype=torch.float64)
    ref["half"] = torch.randn(9, generator=gen).bfloat16()
    got = {n: t + 1e-4 * torch.randn(t.shape, generator=gen, dtype=t.dtype) for n, t in ref.items()}
    got["p3"] = ref["p3"] * 1.5  # past the tolerance
    ref["p5"] = torch.tensor([float("-inf"), 1.0, float("nan")])
    got["p5"] = torch.tensor([float("-inf"), 1.0, float("nan")])  # non-finite on both sides: matches
    ref["p6"], got["p6"] = torch.tensor([float("inf"), 2.0]), torch.tensor([float("-inf"), 2.0])
    got["mismatched"], ref["mismatched"] = torch.ones(2), torch.ones(3)
    tol = Tolerance(1e-3, 1e-3)
    for case in (got, {**got, "p3": ref["p3"]}, {**got, "p6": ref["p6"], "p3": ref["p3"]}):
        diff = compare_grads(case, ref, tol)
        max_abs, within, worst = _tensor_by_tensor(case, ref, tol)
        assert (diff.max_abs, diff.within, diff.where) == (max_abs, within, worst)
    nan_got = {**got, "p7": torch.full_like(ref["p7"], float("nan"))}
    assert compare_grads(nan_got, ref, tol).where == "p7" and np.isinf(compare_grads(nan_got, ref, tol).max_abs)


def test_format_error_passes_a_device_no_further_from_float32_than_the_cpu():
    precise = {"w": torch.linspace(-1, 1, 64)}
    cpu = {"w": precise["w"].bfloat16()}
    close = {"w": (precise["w"] + 2e-3).bfloat16()}
    assert format_error(close, cpu, precise)["within"]
    far = {"w": (precise["w"] + 0.2).bfloat16()}
    verdict = format_error(far, cpu, precise)
    assert not verdict["within"] and verdict["device_vs_float32"] > verdict["cpu_vs_float32"]


def test_seeded_sets_torch_python_and_numpy_alike():
    with seeded(7):
        first = (torch.rand(2), random.random(), np.random.rand())
    with seeded(7):
        second = (torch.rand(2), random.random(), np.random.rand())
    assert torch.equal(first[0], second[0]) and first[1:] == second[1:]


def test_cpu_twin_copies_weights_and_keeps_ties():
    model = torch.nn.Sequential(torch.nn.Embedding(5, 3), torch.nn.Linear(3, 5, bias=False))
    model[1].weight = model[0].weight
    twin = cpu_twin(model)
    assert twin[1].weight is twin[0].weight and twin[0].weight is not model[0].weight
    assert torch.equal(twin[0].weight, model[0].weight)


def test_floating_inputs_follow_the_model_dtype_and_integers_stay():
    inputs = {"input_ids": torch.ones(2, 3, dtype=torch.long), "pixel_values": torch.randn(2, 3),
              "pair": (torch.randn(1), torch.ones(1, dtype=torch.bool)), "use_cache": False}
    cast = cast_floating(inputs, torch.bfloat16)
    assert cast["input_ids"].dtype == torch.long and cast["pair"][1].dtype == torch.bool
    assert cast["pixel_values"].dtype == cast["pair"][0].dtype == torch.bfloat16
    assert cast["use_cache"] is False


def test_sweep_one_prints_forward_and_backward_figures_and_nondeterminism():
    from sweeper.records import ModelRecord, Status
    from sweeper.report.one_model import describe_record

    record = ModelRecord(sweep_id="s", model_id="org/m", key="org/m", device="trnsim", status=Status.PASS,
                         max_abs_diff=0.5, numerics={
                             "forward": {"max_abs": 0.5, "max_rel": 0.25, "within": False},
                             "backward": {"max_abs": 1e-6, "max_rel": 2e-6, "within": True, "where": "w"},
                             "nondeterministic": {"max_abs": 0.4, "max_rel": 0.2, "within": False}})
    text = describe_record(record)
    assert "forward |device - cpu|: max 0.5 (relative 0.25)" in text
    assert "backward |device - cpu|: max 1e-06 (relative 2e-06, worst w)" in text
    assert "nondeterministic: two CPU runs differ by 0.4; not judged" in text
    assert ModelRecord.from_json(record.to_json()).numerics == record.numerics
