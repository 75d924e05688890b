"""Whose a lowering failure is: the chip's only when it names an op the profile does not
call native; the tool's when it fails on a native op or on a graph without naming an op
(with a reproducer keyed by the graph); the harness's when it comes from how the graph is
handed over or from the host (fake constants, a missing package, the lowering limits)."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx
from trnsim_helpers import root_cause, run_compiled

from sweeper.checks import origins
from sweeper.checks.classify import classify
from sweeper.records import Origin, ReasonKind
from sweeper.report import findings

pytest.importorskip("torch_mlir")


@pytest.fixture
def lowering(trnsim, tmp_path):
    """Fresh lowering verdicts and a repro folder, as a sweep sets it."""
    from sweeper.devices.trnsim import compiler, state
    from sweeper.devices.trnsim import lowering as module

    module.clear_cache()
    compiler.reset_lowered()
    state.set_repro_dir(str(tmp_path / "repros"))
    yield module
    state.set_repro_dir(None)
    module.clear_cache()


def _verdict(fn, *args) -> tuple[BaseException, object]:
    """The compile failure of ``fn`` on trnsim, and the record reason the sweep makes of it."""
    with pytest.raises(Exception) as info:
        run_compiled(fn, *args)
    reason = dataclasses.replace(classify(info.value, stage="compile"), stage="compile")  # as the sweep records it
    reason = origins.on_host(reason, upstream_fails=False)
    return root_cause(info.value), reason


class UpThenDown(torch.nn.Module):
    """A transposed convolution, then a plain one: in the backward graph the plain
    ``convolution_backward`` comes first and lowers; the transposed one does not."""

    def __init__(self) -> None:
        super().__init__()
        self.up = torch.nn.ConvTranspose2d(4, 4, kernel_size=2, stride=2)
        self.conv = torch.nn.Conv2d(4, 4, kernel_size=3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(self.up(x))


def test_an_op_that_fails_only_in_one_variant_is_named_and_reproduced_alone(lowering, tmp_path):
    model = UpThenDown().to("trnsim")
    cause, reason = _verdict(model, torch.randn(2, 4, 4, 4, device="trnsim"))
    assert (reason.kind, reason.op, reason.origin) == (ReasonKind.LOWERING_TOOL_ERROR, "aten::convolution_backward",
                                                       Origin.LOWERING_TOOL)
    [script] = (tmp_path / "repros").glob("convolution_backward-*.py")
    assert cause.repro == str(script)
    assert "True" in script.read_text().split("args =")[1].splitlines()[0]  # the transposed variant
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 1, run.stderr


def test_a_tool_failure_that_names_no_op_is_the_tools_with_a_graph_reproducer(lowering, tmp_path, monkeypatch):
    """When no op of the graph fails alone, the whole graph is the reproducer."""
    monkeypatch.setattr(lowering, "blame", lambda gm: None)
    model = UpThenDown().to("trnsim")
    cause, reason = _verdict(model, torch.randn(2, 4, 4, 4, device="trnsim"))
    assert (reason.kind, reason.op, reason.origin) == (ReasonKind.LOWERING_TOOL_ERROR, None, Origin.LOWERING_TOOL)
    assert "without naming an op" in reason.message and "full diagnostic:" in reason.message
    scripts = list((tmp_path / "repros").glob("graph-*.py"))
    assert [str(s) for s in scripts] == [cause.repro]
    # Named as the sweep folder holds it, whatever path the folder was given as.
    assert f"reproducer: repros/{scripts[0].name}\n" in reason.message and str(tmp_path) not in reason.message
    # The report reads the graph and its reproducer back from the message (report.findings).
    assert findings.reproducer(reason.message) == f"repros/{scripts[0].name}"
    assert findings.graph_key(findings.reproducer(reason.message)) == scripts[0].stem
    assert findings.signature(reason.message).startswith("backward graph: ")
    assert (tmp_path / "repros" / scripts[0].name.replace(".py", ".mlir")).exists()
    run = subprocess.run([sys.executable, str(scripts[0])], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 1, run.stderr
    assert "TorchMlirCompilerError" in run.stderr


def test_a_graph_with_tensor_constants_lowers(trnsim, lowering):
    """``torch.tensor`` in model code becomes a lifted constant that Torch-MLIR reads; AOT
    calls the compiler under its fake mode, where the read once gave a storage-less fake
    (falcon, gpt-neo: a device compile_error that was ours)."""
    def fn(t: torch.Tensor) -> torch.Tensor:
        return t * torch.tensor([2.0, -1.0, 0.5], device=t.device) + torch.tensor(3, device=t.device)

    x = torch.randn(2, 3, device="trnsim", requires_grad=True)
    with trnsim.recording() as rec:
        out = run_compiled(fn, x)
    assert rec.errors == [] and rec.compile_problems == []
    torch.testing.assert_close(out.detach().cpu(), fn(x.detach().cpu()))


def test_a_bfloat16_constant_lowers_or_is_the_harness_missing_package(lowering):
    """Torch-MLIR needs ml_dtypes to import bfloat16 constants: without it the failure is
    the host's install, never the chip's."""
    def fn(t: torch.Tensor) -> torch.Tensor:
        return t * torch.tensor([2.0, -1.0], dtype=torch.bfloat16, device=t.device)

    x = torch.randn(3, 2, dtype=torch.bfloat16, device="trnsim")
    if importlib.util.find_spec("ml_dtypes") is not None:
        torch.testing.assert_close(run_compiled(fn, x).cpu(), fn(x.cpu()))
        return
    _, reason = _verdict(fn, x)
    assert (reason.kind, reason.origin) == (ReasonKind.HARNESS, Origin.HARNESS)
    assert "pip install ml-dtypes" in reason.message


def test_a_lowering_past_its_time_limit_is_host_side_work(lowering, runaway_importer, monkeypatch):
    runaway_importer("sleep_a_minute")
    monkeypatch.setattr(lowering, "TIMEOUT_S", 1.0)
    lowering.lower(make_fx(torch.cos, tracing_mode="fake")(torch.rand(4)), name="forward")  # a server starts
    _, reason = _verdict(torch.sin, torch.rand(4, device="trnsim"))
    assert (reason.kind, reason.origin) == (ReasonKind.TIMEOUT, Origin.HARNESS)
    assert "host-side lowering ran past its limits" in reason.message


def test_a_named_op_the_profile_refuses_stays_the_devices(trnsim, lowering):
    """Only this stays a device compile_error (see also test_trnsim_fidelity)."""
    from sweeper.devices.trnsim.profile import parse_profile

    data = {"name": "erfinv-fallback", "dtypes": {"supported": ["float32"]},
            "ops": [{"family": "special functions", "eager": "native", "compile": "fallback", "names": ["aten::erfinv"]}]}
    trnsim.apply_profile(parse_profile(data))
    _, reason = _verdict(torch.erfinv, torch.rand(4, device="trnsim") - 0.5)
    assert (reason.kind, reason.op, reason.origin) == (ReasonKind.COMPILE_ERROR, "aten::erfinv", Origin.DEVICE)


def test_a_lowering_that_runs_out_of_host_memory_is_the_harness_even_when_an_op_fails_alone(lowering,
                                                                                             runaway_importer):
    """google/efficientnet-b2: the backward graph's lowering died of host memory, and a
    probe of one op alone then failed too; the blocker was the tool's, named after that op.
    Memory the host ran out of says nothing about any op: host-side work, the harness's."""
    runaway_importer("dies_on_the_graph")
    _, reason = _verdict(torch.sin, torch.rand(4, device="trnsim"))
    assert (reason.kind, reason.origin, reason.op) == (ReasonKind.OOM, Origin.HARNESS, None)
    assert "ran out of memory" in reason.message and "host-side" in reason.message


def test_blame_probes_stop_at_their_own_time_budget(lowering, runaway_importer, monkeypatch):
    """descript/dac_44khz: blame probes ran on until the worker's limits ended the model.
    All the probes of one blame share a budget; past it no op is blamed."""
    import time

    runaway_importer("graph_fails_probes_hang")
    monkeypatch.setattr(lowering, "TIMEOUT_S", 30.0)
    monkeypatch.setattr(lowering, "BLAME_TIMEOUT_S", 2.0)
    started = time.monotonic()
    _, reason = _verdict(torch.sin, torch.rand(4, device="trnsim"))
    assert time.monotonic() - started < 15
    assert reason.op is None and reason.kind is ReasonKind.LOWERING_TOOL_ERROR


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_a_library_custom_op_is_judged_as_an_aten_op_in_every_dtype(lowering, tmp_path, monkeypatch, dtype):
    """A custom op the profile does not declare is native by the profile's default: the tool
    failing on it is the tool's in float32 and in bfloat16 alike, and its reproducer imports
    the module that registers the op, exits 1 with the same diagnostic, and says so beside it."""
    from custom_op_library import UsesCustomOp

    from sweeper.diagnostics import signature

    model = UsesCustomOp().to(dtype).to("trnsim")
    cause, reason = _verdict(model, torch.randn(2, 8, device="trnsim", dtype=dtype))
    assert (reason.kind, reason.op, reason.origin) == (ReasonKind.LOWERING_TOOL_ERROR, "sweeperlib::scaled_tanh",
                                                       Origin.LOWERING_TOOL)
    [script] = (tmp_path / "repros").glob("sweeperlib.scaled_tanh-*.py")
    assert cause.repro == str(script)
    assert "import custom_op_library  # registers sweeperlib::scaled_tanh" in script.read_text()
    here = str(Path(__file__).parent)
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": here})
    assert run.returncode == 1, run.stderr
    written = json.loads(script.with_suffix(".json").read_text())
    assert written["signature"] == signature(reason.message) == signature(run.stderr)
    assert written["torch-mlir"] == lowering.tool_version() != "absent"
    assert f"Torch-MLIR {written['torch-mlir']}" in script.read_text()


def test_a_large_graphs_mlir_is_written_with_its_long_constants_elided(tmp_path):
    """A constant printed in full (tens of megabytes) does not go into the sweep folder: the
    reproducer's script rebuilds it; the MLIR beside it keeps every op."""
    from sweeper.devices.trnsim.reproducer import write_mlir

    blob = "0x" + "00" * 600_000
    mlir = ('%0 = torch.vtensor.literal(dense<[' + ", ".join(["0.0"] * 300_000) + ']> : tensor<300000xf32>)\n'
            f'%1 = torch.aten.add.Tensor %0, %0\n{{-# dialect_resources: {{ builtin: {{ w: "{blob}" }} }} #-}}\n')
    path = tmp_path / "graph.mlir"
    write_mlir(path, mlir)
    written = path.read_text()
    assert len(written) < 2_000 and "torch.aten.add.Tensor" in written
    assert "dense_resource<__elided__>" in written and "600000 bytes elided" in written
    write_mlir(path, "%0 = torch.vtensor.literal(dense<[1.0, 2.0]> : tensor<2xf32>)")  # small: as it is
    assert path.read_text() == "%0 = torch.vtensor.literal(dense<[1.0, 2.0]> : tensor<2xf32>)"


def _transposed_backward(size: int) -> torch.fx.GraphModule:
    """A prepared graph whose transposed ``convolution_backward`` fails to lower alone."""
    from sweeper.devices.trnsim import lowering

    def step(x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return torch.autograd.grad(torch.nn.functional.conv_transpose2d(x, w, stride=2).sum(), (x, w))

    x = torch.randn(2, 4, size, size, requires_grad=True)
    return lowering.prepare(make_fx(step)(x, torch.randn(4, 4, 2, 2, requires_grad=True)))


def test_a_reproducer_has_the_same_name_whichever_model_met_its_op_first(tmp_path):
    """Two workers meet an op's variants in either order: each script's name follows from
    the script, so records and reports name the same file night after night."""
    from sweeper.devices.trnsim.reproducer import write_reproducer

    graphs = {4: _transposed_backward(4), 6: _transposed_backward(6)}
    names: dict[str, dict[int, str]] = {}
    for order in ((4, 6), (6, 4)):
        folder = tmp_path / "-".join(map(str, order))
        names[folder.name] = {size: write_reproducer(graphs[size], "aten::convolution_backward", folder,
                                                     where="backward graph").name for size in order}
    assert names["4-6"] == names["6-4"]
    assert len(set(names["4-6"].values())) == 2
    for name in names["4-6"].values():
        assert name.startswith("convolution_backward-") and f"Run: python {name}" in (tmp_path / "4-6" / name).read_text()


def test_a_bitsandbytes_reproducer_runs_without_fetching_the_hubs_kernels(tmp_path):
    """Importing bitsandbytes would fetch a kernel from the Hub (``kernels`` installed, a CPU
    with AVX512-BF16) and fail offline; the sweep hides that package, and so does the script."""
    pytest.importorskip("bitsandbytes")
    from torch._subclasses.fake_tensor import FakeTensorMode

    from sweeper.devices.trnsim.reproducer import script_for
    from sweeper.libraries.quantization import import_without_hub_kernels

    import_without_hub_kernels()
    graph = torch.fx.Graph()
    with FakeTensorMode():
        fakes = [torch.empty(2, 16, 512), torch.empty(131072, 1, dtype=torch.uint8), torch.empty(4096)]
    inputs = []
    for i, fake in enumerate(fakes):
        inputs.append(graph.placeholder(f"in{i}"))
        inputs[-1].meta["val"] = fake
    node = graph.call_function(torch.ops.bitsandbytes.gemm_4bit.default, (inputs[0], inputs[1], [512, 512], inputs[2], 64, "nf4"))
    script = tmp_path / "gemm_4bit.py"
    script.write_text(script_for(node, where="forward graph", filename=script.name))
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 1, run.stderr
    # The tool's diagnostic comes first, as check-repros reads it, and no kernel was asked of the Hub.
    assert run.stderr.startswith("failed to legalize operation 'torch.operator'"), run.stderr
    assert "kernels-community" not in run.stderr
