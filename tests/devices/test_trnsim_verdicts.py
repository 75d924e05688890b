"""The verdict suite: purpose-built modules and the outcome trnsim gives each, eager and
compiled. Each test states the verdict a sweep would record."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from trnsim_helpers import root_cause, run_compiled

from sweeper.records import ReasonKind


def _mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))


def test_mlp_runs_natively_in_eager(trnsim):
    cpu = _mlp()
    dev = _mlp().to("trnsim")
    x = torch.randn(5, 8)
    with trnsim.recording() as rec:
        out = dev(x.to("trnsim"))
        out.sum().backward()
    torch.testing.assert_close(out.detach().cpu(), cpu(x))
    assert rec.fallback_ops == {} and rec.errors == [] and rec.blockers == []
    assert rec.ops["aten::addmm"] == 2


def test_mlp_compiles_and_lowers_to_stablehlo(trnsim):
    from sweeper.devices.trnsim import compiler

    compiler.reset_lowered()
    dev = _mlp().to("trnsim")
    x = torch.randn(5, 8, device="trnsim")
    with trnsim.recording() as rec:
        out = run_compiled(dev, x)
    torch.testing.assert_close(out.detach().cpu(), _mlp()(x.cpu()))
    assert all(p.grad is not None and p.grad.device.type == "trnsim" for p in dev.parameters())
    assert rec.compile_problems == [] and rec.blockers == [] and rec.fallback_ops == {}
    kinds = [kind for kind, _ in compiler.LOWERED]
    assert kinds == ["forward", "backward"]
    assert all("stablehlo." in text for _, text in compiler.LOWERED)
    assert compiler.graph_break_count() == 0


@pytest.mark.parametrize("cls, cells", [
    (torch.nn.LSTM, ("aten::_thnn_fused_lstm_cell", "aten::_thnn_fused_lstm_cell_backward_impl")),
    (torch.nn.GRU, ("aten::_thnn_fused_gru_cell", "aten::_thnn_fused_gru_cell_backward")),
])
def test_rnn_fused_cells_fall_back_in_eager(trnsim, cls, cells):
    torch.manual_seed(0)
    cpu = cls(4, 8, batch_first=True)
    dev = cls(4, 8, batch_first=True)
    dev.load_state_dict(cpu.state_dict())
    dev.to("trnsim")
    x = torch.randn(2, 3, 4)
    with trnsim.recording() as rec:
        out, _ = dev(x.to("trnsim"))
        out.sum().backward()
    torch.testing.assert_close(out.detach().cpu(), cpu(x)[0])
    assert rec.fallback_ops == {cells[0]: 3, cells[1]: 3}  # one cell per time step
    with trnsim.strict(), pytest.raises(trnsim.UnsupportedOpError, match=cells[0]):
        dev(x.to("trnsim"))


@pytest.mark.parametrize("cls", [torch.nn.LSTM, torch.nn.GRU])
def test_rnn_compiled_is_a_graph_break_then_eager_fallback(trnsim, cls):
    """Dynamo does not capture RNN modules: the graph breaks, the module runs eagerly and
    its fused cells fall back to the host as in eager mode. No compile error."""
    from sweeper.devices.trnsim import compiler

    rnn = cls(4, 8).to("trnsim")
    with trnsim.recording() as rec:
        run_compiled(lambda x: rnn(x)[0].sum(), torch.randn(3, 2, 4, device="trnsim"))
    assert any("RNN, GRU, or LSTM" in r for r in compiler.graph_break_reasons())
    assert sum(rec.fallback_ops.values()) == 6 and rec.blockers == []


@pytest.mark.parametrize("cls, cell", [(torch.nn.LSTM, "aten::_thnn_fused_lstm_cell"),
                                       (torch.nn.GRU, "aten::_thnn_fused_gru_cell")])
def test_rnn_captured_with_allow_rnn_is_refused_by_its_cell(trnsim, cls, cell):
    """With Dynamo's experimental RNN capture the module is in the graph; the fused cell it
    dispatches has no compiler lowering, even though AOT would decompose it away."""
    rnn = cls(4, 8).to("trnsim")
    with torch._dynamo.config.patch(allow_rnn=True), pytest.raises(Exception) as info:
        run_compiled(lambda x: rnn(x)[0].sum(), torch.randn(3, 2, 4, device="trnsim"))
    cause = root_cause(info.value)
    assert (type(cause), cause.op) == (trnsim.UnsupportedOpError, cell)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_interpolate_falls_back_in_eager_and_has_no_lowering(trnsim, mode):
    x = torch.randn(1, 2, 4, 4, device="trnsim", requires_grad=True)
    with trnsim.recording() as rec:
        F.interpolate(x, scale_factor=2, mode=mode).sum().backward()
    op = f"aten::upsample_{mode}2d"
    assert rec.fallback_ops == {op: 1, f"{op}_backward": 1}
    with pytest.raises(Exception) as info:
        run_compiled(lambda t: F.interpolate(t, scale_factor=2, mode=mode), x)
    cause = root_cause(info.value)
    assert isinstance(cause, trnsim.UnsupportedOpError)
    assert (cause.reason_kind, cause.op) == (ReasonKind.UNSUPPORTED_OP, op)


def test_float64_parameter_is_a_dtype_verdict(trnsim):
    model = torch.nn.Linear(3, 3).double()
    with pytest.raises(trnsim.UnsupportedDtypeError) as info:
        model.to("trnsim")
    assert info.value.reason_kind is ReasonKind.UNSUPPORTED_DTYPE
    assert info.value.dtype == "torch.float64"
    with pytest.raises(trnsim.UnsupportedDtypeError):
        torch.ones(2, device="trnsim").to(torch.complex64)


def test_forward_ad_is_refused(trnsim):
    x = torch.randn(3, device="trnsim")
    with pytest.raises(trnsim.UnsupportedFeatureError) as info:
        torch.func.jvp(torch.sin, (x,), (torch.ones_like(x),))
    assert (info.value.op, info.value.feature) == ("aten::_make_dual", "forward_ad")
    assert info.value.reason_kind is ReasonKind.UNSUPPORTED_FEATURE


def test_sparse_tensors_are_refused(trnsim):
    with pytest.raises(trnsim.UnsupportedFeatureError, match="sparse"):
        torch.eye(3).to_sparse().to("trnsim")
    with pytest.raises(trnsim.UnsupportedFeatureError, match="sparse"):
        torch.eye(3, device="trnsim").to_sparse()


def test_nested_tensors_are_refused(trnsim):
    parts = [torch.randn(2, 3), torch.randn(4, 3)]
    with pytest.raises(trnsim.UnsupportedFeatureError, match="nested"):
        torch.nested.nested_tensor(parts, layout=torch.jagged, device="trnsim")
    strided = torch.nested.nested_tensor(parts, device="trnsim")
    with pytest.raises(trnsim.UnsupportedFeatureError, match="nested"):
        strided + 1


def test_nonzero_runs_in_eager_but_not_in_a_compiled_graph(trnsim):
    x = torch.tensor([0.0, 1.0, 0.0, 2.0], device="trnsim")
    assert torch.nonzero(x).cpu().flatten().tolist() == [1, 3]
    with pytest.raises(Exception) as info:
        run_compiled(lambda t: torch.nonzero(t).float().sum(), x, whole_graph=True)
    cause = root_cause(info.value)
    assert isinstance(cause, trnsim.DynamicShapeError)
    assert (cause.reason_kind, cause.op) == (ReasonKind.DYNAMIC_SHAPE, "aten::nonzero")


def test_nonzero_breaks_the_graph_by_default_and_runs_eagerly_on_the_device(trnsim):
    """As a user's torch.compile: Dynamo's defaults break the graph at a data-dependent op,
    which runs in eager mode on the device (the profile's eager policy: native)."""
    import torch._dynamo
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    x = torch.tensor([0.0, 1.0, 0.0, 2.0], device="trnsim")
    out = run_compiled(lambda t: torch.nonzero(t).float().sum() + t.sum(), x)
    assert out.item() == 7.0
    assert sum(counters["graph_break"].values()) >= 1


def test_dynamic_true_is_refused(trnsim):
    fn = torch.compile(lambda t: (t * 2).sum(), backend="trnsim", dynamic=True)
    with pytest.raises(Exception) as info:
        fn(torch.randn(8, device="trnsim"))
    assert root_cause(info.value).reason_kind is ReasonKind.DYNAMIC_SHAPE


def test_an_op_that_fails_to_legalize_is_a_lowering_tool_error_naming_it(trnsim):
    """erfinv runs natively in eager, but Torch-MLIR cannot legalize it to StableHLO: the
    profile calls it native, so the failure is the lowering tool's, not the chip's."""
    x = torch.rand(4, device="trnsim") - 0.5
    with trnsim.recording() as rec:
        eager = torch.erfinv(x)
    assert rec.fallback_ops == {}
    torch.testing.assert_close(eager.cpu(), torch.erfinv(x.cpu()))
    with trnsim.recording() as rec, pytest.raises(Exception) as info:
        run_compiled(torch.erfinv, x)
    cause = root_cause(info.value)
    assert isinstance(cause, trnsim.LoweringToolError)
    assert (cause.reason_kind, cause.op) == (ReasonKind.LOWERING_TOOL_ERROR, "aten::erfinv")
    assert any("aten::erfinv" in p for p in rec.compile_problems)


def test_collect_all_compile_reports_every_blocker(trnsim):
    x = torch.rand(1, 1, 4, 4, device="trnsim")

    def both(t: torch.Tensor) -> torch.Tensor:
        return F.interpolate(t, scale_factor=2, mode="bicubic").sum() + torch.erfinv(t - 0.5).sum()

    with trnsim.collect_all(), trnsim.recording() as rec:
        run_compiled(both, x)
    found = {(b.kind, b.op) for b in rec.blockers}
    assert found == {(ReasonKind.UNSUPPORTED_OP, "aten::upsample_bicubic2d"),
                     (ReasonKind.LOWERING_TOOL_ERROR, "aten::erfinv")}


def test_gpt2_ties_are_undone_by_to_without_identity_and_the_fix_keeps_them(trnsim, tmp_path):
    from trnsim_helpers import profile_without_parameter_identity, tiny_model

    from sweeper.devices.trnsim import retie_fix
    from sweeper.devices.trnsim.ties import tied_pairs, untied_pairs

    trnsim.apply_profile(trnsim.load_profile(profile_without_parameter_identity(tmp_path)))
    model, _ = tiny_model("gpt2")
    before = tied_pairs(model)
    assert ("transformer.wte.weight", "lm_head.weight") in before
    model.to("trnsim")
    assert untied_pairs(model, before) == before  # the PrivateUse1 effect without the vendor override
    model.tie_weights()
    assert untied_pairs(model, before) == []
    fixed, _ = tiny_model("gpt2")
    with retie_fix():
        fixed.to("trnsim")
    assert untied_pairs(fixed, before) == []
    assert fixed.lm_head.weight.device.type == "trnsim"


def test_new_shapes_recompile_statically(trnsim):
    from sweeper.devices.trnsim import compiler

    compiler.reset_lowered()
    fn = torch.compile(lambda t: (t * 2).sum(), backend="trnsim")
    assert fn(torch.ones(4, device="trnsim")).item() == 8
    assert fn(torch.ones(6, device="trnsim")).item() == 12
    assert [kind for kind, _ in compiler.LOWERED] == ["inference", "inference"]


class _Position(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.arange(x.shape[-1], dtype=torch.float64, device=x.device).float()


class _Encoder(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList([_Position()])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers[0](x)


def test_a_dtype_verdict_names_the_module_by_its_attribute_path(trnsim):
    model = torch.nn.Sequential()
    model.add_module("encoder", _Encoder())
    with pytest.raises(Exception) as info:
        run_compiled(model.to("trnsim"), torch.randn(2, 4, device="trnsim"))
    cause = root_cause(info.value)
    assert isinstance(cause, trnsim.UnsupportedDtypeError)
    assert "(in module encoder.layers.0: _Position)" in str(cause)


@pytest.mark.parametrize("source", [
    "L['self'].model.encoder.layers.0.attn",
    "L['self'].__dict__['_modules']['model'].__dict__['_modules']['encoder'].layers[0].attn",
    "L['self']._modules['model']._modules['encoder'].__dict__['_modules']['layers'].0.attn",
])
def test_every_spelling_dynamo_gives_a_module_reads_as_its_attribute_path(source):
    from sweeper.devices.trnsim.graphcheck import dotted_module_path

    assert dotted_module_path(source) == "model.encoder.layers.0.attn"
    assert dotted_module_path("L['self']") == "the model"
