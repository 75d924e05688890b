"""trnsim's device guard: a backward node that fails in Python code is an exception, never
a SIGABRT of the process (facebook/mms-tts-yor, microsoft/kosmos-2-patch14-224 died so in
stage compile). Each case runs in a fresh interpreter: the device registers once per process,
and the failure before the fix killed the process."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("sweeper.devices.trnsim", exc_type=ImportError)  # beside an untested torch it says which
ROOT = Path(__file__).resolve().parents[2]
needs_compiler = pytest.mark.skipif(not (os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")),
                                    reason="no C++ compiler: trnsim keeps PyTorch's Python guard")

# A dispatch mode that raises in Python while the autograd engine runs a trnsim node: the
# same path as AOT autograd tracing a backward under fake tensors.
DISPATCH_ERROR = """
import torch
import sweeper.devices.trnsim
from sweeper.devices.trnsim.nativeguard import guard_kind
from torch.utils._python_dispatch import TorchDispatchMode

class FailsOnMul(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.aten.mul.Tensor:
            raise ValueError("refused by a dispatch mode")
        return func(*args, **(kwargs or {}))

x = torch.ones(3, device="trnsim", requires_grad=True)
y = (x * x).sum()
try:
    with FailsOnMul():
        y.backward()
except ValueError as exc:
    print("caught:", exc, "guard:", guard_kind())
"""

# The pattern of VITS's rational-quadratic spline: boolean-mask assignment, whose backward
# needs nonzero (data-dependent): AOT's backward tracing fails and Dynamo breaks the graph.
MASKED_SPLINE = """
import torch
import sweeper.devices.trnsim

def spline(x, w):
    inside = (x >= -1) & (x <= 1)
    out = torch.zeros_like(x)
    out[~inside] = x[~inside]
    out[inside] = torch.sin(x[inside]) * w[inside]
    return out

torch.manual_seed(0)
x0, w0 = torch.randn(64), torch.randn(64)
grads = []
for device, backend in (("cpu", None), ("trnsim", "trnsim")):
    x = x0.clone().to(device).requires_grad_()
    w = w0.clone().to(device).requires_grad_()
    fn = torch.compile(spline, backend=backend) if backend else spline
    fn(x, w).sum().backward()
    grads.append((x.grad.cpu(), w.grad.cpu()))
assert all(torch.equal(a, b) for a, b in zip(*grads)), "trnsim gradients differ from eager CPU"
print("compiled backward ok")
"""


def _run(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=environ, timeout=600, cwd=ROOT)


@needs_compiler
def test_a_python_error_in_a_backward_node_is_an_exception():
    done = _run(DISPATCH_ERROR)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "caught: refused by a dispatch mode guard: native" in done.stdout


def test_pytorchs_python_guard_is_what_aborted():
    """The cause, kept visible: with PyTorch's Python-backend guard the same backward ends
    the process with SIGABRT. (If a torch release fixes its guard, this test says so.)"""
    done = _run(DISPATCH_ERROR, TRNSIM_NATIVE_GUARD="0")
    assert done.returncode == -signal.SIGABRT, (done.returncode, done.stdout, done.stderr[-1000:])
    assert "terminate called" in done.stderr


@needs_compiler
def test_compiled_backward_over_a_masked_assignment_runs_like_cpu():
    done = _run(MASKED_SPLINE)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "compiled backward ok" in done.stdout


@needs_compiler
def test_the_guard_is_built_into_its_cache_folder(tmp_path):
    done = _run("import sweeper.devices.trnsim\nfrom sweeper.devices.trnsim.nativeguard import guard_kind\n"
                "print(guard_kind())", TRNSIM_GUARD_CACHE=str(tmp_path))
    assert done.stdout.strip().splitlines()[-1] == "native", done.stderr[-2000:]
    assert len(list(tmp_path.glob("trnsim_guard_*.so"))) == 1
