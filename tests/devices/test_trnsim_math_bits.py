"""Conjugate and negative views on trnsim: complex autograd (``a * b`` then backward makes
``grad.conj()`` views) runs and matches CPU, instead of recursing through ``_copy_from``
until the process dies. Each case runs in a child process, so a regression fails one
test instead of killing the test run with a segfault."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sweeper.devices.trnsim.profile import DEFAULT_PROFILE

ROOT = Path(__file__).resolve().parents[2]


def _complex_profile(folder: Path) -> Path:
    """The default profile plus complex64, so complex math is the chip's to run."""
    text = DEFAULT_PROFILE.read_text()
    assert 'supported = ["float32",' in text
    path = folder / "trnsim-complex.toml"
    path.write_text(text.replace('supported = ["float32",', 'supported = ["float32", "complex64",', 1))
    return path


def _run(body: str, profile: Path | None) -> dict:
    """Run ``body`` in a fresh process with trnsim registered; it sets ``result``."""
    code = textwrap.dedent("""
        import json, sys, torch
        import sweeper.devices.trnsim as trnsim
        trnsim.apply_profile(trnsim.load_profile(sys.argv[1] or None))
        torch.manual_seed(0)
        result = {}
    """) + textwrap.dedent(body) + "\nprint(json.dumps(result))\n"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", code, str(profile or "")], capture_output=True, text=True,
                          timeout=300, env=env, cwd=ROOT)
    assert proc.returncode == 0, f"child exited {proc.returncode}: {proc.stderr[-2000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


_MUL_BACKWARD = """
    a = torch.randn(4, 3, dtype=torch.complex64, requires_grad=True)
    b = torch.randn(4, 3, dtype=torch.complex64, requires_grad=True)
    (a * b).abs().sum().backward()
    with trnsim.recording() as rec, trnsim.collect_all(COLLECT):
        ad = a.detach().to("trnsim").requires_grad_()
        bd = b.detach().to("trnsim").requires_grad_()
        (ad * bd).abs().sum().backward()
    result["device"] = str(ad.grad.device)
    result["grads_match"] = torch.allclose(ad.grad.cpu(), a.grad) and torch.allclose(bd.grad.cpu(), b.grad)
    result["blockers"] = sorted({r.kind.value for r in rec.blockers})
"""


def test_complex_mul_backward_matches_cpu_when_the_profile_allows_complex(tmp_path):
    out = _run(_MUL_BACKWARD.replace("COLLECT", "False"), _complex_profile(tmp_path))
    assert out == {"device": "trnsim:0", "grads_match": True, "blockers": []}


def test_collect_all_records_the_complex_dtype_and_runs_on(tmp_path):
    """The default profile refuses complex; collect-all records it and must still finish
    (this is the path ``sweep --collect-all`` takes on DeepSeek-V2's rotary embedding)."""
    out = _run(_MUL_BACKWARD.replace("COLLECT", "True"), None)
    assert out == {"device": "trnsim:0", "grads_match": True, "blockers": ["unsupported_dtype"]}


_VIEW_CASES = [
    ("conj to cpu", "result['ok'] = torch.equal(xd.conj().cpu(), x.conj())"),
    ("resolve_conj", "result['ok'] = torch.equal(xd.conj().resolve_conj().cpu(), x.conj())"),
    ("resolve_neg", "result['ok'] = torch.equal(xd.conj().imag.resolve_neg().cpu(), x.conj().imag)"),
    ("mm reads the bit", "result['ok'] = torch.allclose((xd.conj() @ yd).cpu(), x.conj() @ y)"),
    ("neg view in an op", "result['ok'] = torch.equal((xd.conj().imag * 2).cpu(), x.conj().imag * 2)"),
    ("copy into a conj view",
     "z = torch.zeros_like(xd); z.conj().copy_(yd); result['ok'] = torch.equal(z.cpu(), y.conj())"),
    ("cpu conj to trnsim", "result['ok'] = torch.equal(x.conj().to('trnsim').cpu(), x.conj())"),
    # The host's vdot of a conjugate view returns a lazily conjugated result: the bit must survive the wrap.
    ("result with a conj bit",
     "result['ok'] = torch.allclose(torch.vdot(xd[0], yd[1].conj()).cpu(), torch.vdot(x[0], y[1].conj()))"),
]


@pytest.mark.parametrize("case, body", _VIEW_CASES, ids=[case for case, _ in _VIEW_CASES])
def test_conjugate_and_negative_views_read_and_write_like_cpu(tmp_path, case, body):
    setup = """
        x = torch.randn(3, 3, dtype=torch.complex64); y = torch.randn(3, 3, dtype=torch.complex64)
        xd, yd = x.to("trnsim"), y.to("trnsim")
    """
    assert _run(textwrap.dedent(setup) + body, _complex_profile(tmp_path)) == {"ok": True}, case
