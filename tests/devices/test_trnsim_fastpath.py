"""trnsim's C++ fast path: the common case of every generic op runs in C++, anything it
cannot decide reaches the Python kernel, and without it trnsim runs the same in Python."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
needs_compiler = pytest.mark.skipif(not (os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")),
                                    reason="no C++ compiler: trnsim runs every op through its Python kernel")


@needs_compiler
def test_the_common_case_runs_in_cpp_and_recordings_still_count_it(trnsim):
    from sweeper.devices.trnsim import fastpath

    assert fastpath.kind() == "native"
    assert "aten::add.Tensor" in fastpath.INDEX and "aten::view" in fastpath.INDEX
    x = torch.randn(2, 3, device="trnsim")
    x.neg()  # outside any recording: counted nowhere
    with trnsim.recording() as outer:
        y = x + x
        with trnsim.recording() as inner:
            y.add_(1)
            v = y.view(6)
        y.exp()
    assert outer.ops["aten::add.Tensor"] == 1 and outer.ops["aten::exp"] == 1
    assert outer.ops["aten::add_.Tensor"] == 1 and outer.ops["aten::view"] == 1
    assert dict(inner.ops) == {"aten::add_.Tensor": 1, "aten::view": 1}
    assert "aten::neg" not in outer.ops
    assert torch.equal(v.cpu(), (x.cpu() * 2 + 1).view(6))
    assert v.untyped_storage().data_ptr() == y.untyped_storage().data_ptr()  # a view shares memory


@needs_compiler
def test_what_the_cpp_kernel_cannot_decide_reaches_the_python_kernel(trnsim):
    x = torch.randn(8, device="trnsim")
    # A refused dtype asked for by an argument, and one only the host's result shows.
    with pytest.raises(trnsim.UnsupportedDtypeError) as info:
        x.sum(dtype=torch.float64)
    assert info.value.op.startswith("aten::sum")
    with pytest.raises(trnsim.UnsupportedDtypeError) as info:
        torch.fft.rfft(x)
    assert info.value.op == "aten::_fft_r2c"
    with trnsim.collect_all(), trnsim.recording() as rec:  # the op ran once, counted once
        torch.fft.rfft(x)
    assert rec.ops["aten::_fft_r2c"] == 1 and [b.op for b in rec.blockers] == ["aten::_fft_r2c"]
    # A fallback op is still recorded as one, and strict mode still refuses it.
    with trnsim.recording() as rec:
        torch.nn.functional.interpolate(torch.randn(1, 1, 2, 2, device="trnsim"), scale_factor=2, mode="bilinear")
    assert rec.fallback_ops == {"aten::upsample_bilinear2d": 1}
    # An in-place op returns its own argument; a result aliasing nothing is a new storage.
    y = x.clone()
    assert y.mul_(2) is y and y.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()


def test_without_the_native_path_trnsim_runs_the_same_in_python():
    script = textwrap.dedent("""
        import json, torch
        import sweeper.devices.trnsim as trnsim
        from sweeper.devices.trnsim import fastpath, storage
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 2))
        x = torch.randn(4, 8)
        model(x).sum().backward()
        want = [p.grad.clone() for p in model.parameters()]
        model.zero_grad()
        model.to("trnsim")
        with trnsim.recording() as rec:
            model(x.to("trnsim")).sum().backward()
        same = all(torch.allclose(p.grad.cpu(), w, atol=1e-6) for p, w in zip(model.parameters(), want))
        print(json.dumps({"kind": fastpath.kind(), "same": same, "addmm": rec.ops["aten::addmm"],
                          "live": storage.live_allocations()}))
    """)
    for native in ("0", "1"):
        env = {**os.environ, "TRNSIM_NATIVE_KERNELS": native, "PYTHONPATH": str(ROOT)}
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                              timeout=300, cwd=ROOT)
        assert done.returncode == 0, done.stderr[-2000:]
        seen = json.loads(done.stdout.strip().splitlines()[-1])
        assert seen["same"] and seen["addmm"] == 2 and seen["live"] > 0, seen
        if native == "0":
            assert seen["kind"] == "python: TRNSIM_NATIVE_KERNELS=0"
