"""trnsim behaves like a mature vendor backend: Parameter identity per profile, graphs
canonicalised and decomposed before an op is judged, lowering-tool failures told apart
from chip gaps (with a reproducer that runs on its own)."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx
from trnsim_helpers import profile_without_parameter_identity, root_cause, run_compiled, tiny_model

from sweeper.checks.classify import classify
from sweeper.records import ReasonKind

INT64_MAX = 9223372036854775807


# --- 1. Parameter identity ---------------------------------------------------------------

def test_to_keeps_tied_weights_by_default_and_unties_them_without_identity(trnsim, tmp_path):
    """The override is registered once per process; the active profile decides each call."""
    model, inputs = tiny_model("gpt2")
    model.to("trnsim")
    assert model.lm_head.weight is model.transformer.wte.weight
    assert model.lm_head.weight.device.type == "trnsim"
    model(**{k: v.to("trnsim") for k, v in inputs.items()}).logits.sum().backward()
    assert torch.isfinite(model.lm_head.weight.grad).all()

    trnsim.apply_profile(trnsim.load_profile(profile_without_parameter_identity(tmp_path)))
    assert not trnsim.active_profile().allows("keeps_parameter_identity")
    untied, _ = tiny_model("gpt2")
    untied.to("trnsim")
    assert untied.lm_head.weight is not untied.transformer.wte.weight


# --- 2. Canonical graphs -----------------------------------------------------------------

def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    """RoPE's rotate_half, as Llama, Qwen and Mistral write it."""
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def test_rope_rotate_half_backward_lowers(trnsim):
    """Its backward emits slice_scatter(..., end=INT64_MAX), which Torch-MLIR fails on
    until the bound is clamped to the dimension."""
    from sweeper.devices.trnsim import compiler

    compiler.reset_lowered()
    x = torch.randn(2, 4, 8, device="trnsim", requires_grad=True)
    with trnsim.recording() as rec:
        run_compiled(lambda t: t * 0.5 + _rotate_half(t) * 2.0, x)
    assert rec.errors == [] and rec.compile_problems == []
    assert {"forward", "backward"} <= {kind for kind, _ in compiler.LOWERED}
    expected = torch.randn(2, 4, 8, requires_grad=True)
    with torch.no_grad():
        expected.copy_(x.detach().cpu())
    (expected * 0.5 + _rotate_half(expected) * 2.0).sum().backward()
    torch.testing.assert_close(x.grad.cpu(), expected.grad)


def test_slice_bounds_are_clamped_and_normalised():
    from sweeper.devices.trnsim.lowering import prepare

    def fn(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        scattered = torch.ops.aten.slice_scatter.default(x, y, -1, 8, INT64_MAX)
        return scattered, torch.ops.aten.slice.Tensor(x, 1, -3, 100)

    gm = prepare(make_fx(fn)(torch.randn(2, 4, 16), torch.randn(2, 4, 8)))
    args = {n.target._schema.name: n.args[-4:] for n in gm.graph.nodes if n.op == "call_function"}
    assert args["aten::slice_scatter"] == (2, 8, 16, 1)
    assert args["aten::slice"] == (1, 1, 4, 1)


def test_non_op_nodes_never_reach_the_lowering():
    from sweeper.devices.trnsim import lowering
    from sweeper.devices.trnsim.canonical import is_non_op

    def fn(x: torch.Tensor) -> torch.Tensor:
        torch.ops.aten._assert_async.msg(x.sum() > -1e9, "finite")
        return torch.ops.prims.device_put.default(x * 2, torch.device("cpu")) + 1

    gm = make_fx(fn)(torch.randn(3))
    assert any(is_non_op(n.target) for n in gm.graph.nodes if n.op == "call_function")
    prepared = lowering.prepare(gm)
    left = [n.target for n in prepared.graph.nodes if n.op == "call_function"]
    assert left and not any(is_non_op(t) for t in left)
    assert lowering.lower(gm).ok


@pytest.mark.parametrize("name", ["aten::sym_size.int", "aten::_assert_scalar", "prims::device_put",
                                  "aten::sym_constrain_range_for_size"])
def test_non_ops_are_never_blamed(name):
    from sweeper.devices.trnsim.canonical import is_non_op
    from sweeper.devices.trnsim.lowering import failing_op

    assert is_non_op(name)
    namespace, op = name.split("::", 1)
    assert failing_op(f"failed: torch.{namespace}.{op.split('.')[0]} then torch.aten.erfinv") == "aten::erfinv"


def test_data_dependent_shapes_name_the_op_not_the_size_query(trnsim):
    def fn(t: torch.Tensor) -> torch.Tensor:
        idx = torch.nonzero(t > 0)
        return (idx.float() * idx.shape[0]).sum()

    with trnsim.collect_all(), trnsim.recording() as rec:
        run_compiled(fn, torch.randn(8, device="trnsim"), backward=False, whole_graph=True)
    named = {b.op for b in rec.blockers if b.op}
    assert "aten::nonzero" in named
    assert not any("sym_" in op or "assert" in op or "getitem" in op for op in named), named


def test_weight_norm_and_convolution_backward_decompose_exactly():
    from sweeper.devices.trnsim.decomps import convolution_backward, weight_norm_interface_backward

    v, g = torch.randn(6, 3, 4), torch.rand(6, 1, 1) + 0.5
    w, norms = torch.ops.aten._weight_norm_interface(v, g, 0)
    grad_w = torch.randn_like(w)
    expected = torch.ops.aten._weight_norm_interface_backward(grad_w, v, g, norms, 0)
    for got, want in zip(weight_norm_interface_backward(grad_w, v, g, norms, 0), expected):
        torch.testing.assert_close(got, want)
    x, weight = torch.randn(2, 4, 17), torch.randn(6, 2, 3)
    out = torch.ops.aten.convolution(x, weight, None, [2], [1], [1], False, [0], 2)
    args = (torch.randn_like(out), x, weight, [6], [2], [1], [1], False, [0], 2, [True, True, True])
    for got, want in zip(convolution_backward(*args), torch.ops.aten.convolution_backward(*args)):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


def test_strided_grouped_conv1d_with_weight_norm_compiles(trnsim):
    """wav2vec2's and Whisper's convolutions: Torch-MLIR fails on their backward as is."""
    conv = torch.nn.Conv1d(4, 8, 3, stride=2, padding=1)
    norm = torch.nn.utils.parametrizations.weight_norm(torch.nn.Conv1d(8, 8, 3, padding=1, groups=2))
    model = torch.nn.Sequential(conv, norm).to("trnsim")
    with trnsim.recording() as rec:
        run_compiled(model, torch.randn(2, 4, 17, device="trnsim"))
    assert rec.errors == [] and rec.compile_problems == []


# --- 3. Lowering-tool findings -----------------------------------------------------------

def test_lowering_tool_error_keeps_the_diagnostic_and_writes_a_runnable_reproducer(trnsim, tmp_path):
    from sweeper.devices.trnsim import state

    state.set_repro_dir(str(tmp_path / "repros"))
    try:
        with pytest.raises(Exception) as info:
            run_compiled(lambda t: torch.erfinv(t * 0.5), torch.rand(4, 8, device="trnsim"))
    finally:
        state.set_repro_dir(None)
    reason = classify(info.value, stage="compile")
    assert (reason.kind, reason.op) == (ReasonKind.LOWERING_TOOL_ERROR, "aten::erfinv")
    assert "full diagnostic:" in reason.message and "failed to legalize operation 'torch.aten.erfinv'" in reason.message
    assert "TorchMlirCompilerError" in reason.message  # the tool's own report, not just its first line
    [script] = (tmp_path / "repros").glob("erfinv-*.py")
    assert f"reproducer: repros/{script.name}" in reason.message and root_cause(info.value).repro == str(script)
    assert "torch.aten.erfinv" in script.with_suffix(".mlir").read_text()
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                         cwd=tmp_path)  # on its own: no sweeper on the path is needed
    assert run.returncode == 1, run.stderr
    assert "torch.aten.erfinv" in run.stderr


def test_a_lowering_failure_of_an_op_the_profile_refuses_stays_a_compile_error(trnsim):
    """erfinv given a host fallback in compiled graphs: not native, so not the tool's fault."""
    from sweeper.devices.trnsim.profile import parse_profile

    base = trnsim.load_profile(None)
    data = {"name": "erfinv-fallback", "dtypes": {"supported": ["float32"]},
            "ops": [{"family": "special functions", "eager": "native", "compile": "fallback", "names": ["aten::erfinv"]}]}
    trnsim.apply_profile(parse_profile(data))
    try:
        with pytest.raises(Exception) as info:
            run_compiled(torch.erfinv, torch.rand(4, device="trnsim") - 0.5)
    finally:
        trnsim.apply_profile(base)
    cause = root_cause(info.value)
    assert (cause.reason_kind, cause.op) == (ReasonKind.COMPILE_ERROR, "aten::erfinv")


def test_the_sweep_folder_reaches_the_compiler(trnsim, tmp_path):
    from sweeper.devices.base import get_device
    from sweeper.devices.trnsim import state

    device = get_device("trnsim", profile=None, collect_all=False, out_dir=str(tmp_path))
    try:
        device.setup()
        assert state.STATE.repro_dir == str(tmp_path / "repros")
    finally:
        state.set_repro_dir(None)
