"""trnsim as a PyTorch device: what plain PyTorch code can do with it."""

from __future__ import annotations

import copy
import gc
import io
import subprocess
import sys

import pytest
import torch


def test_device_identity_and_round_trip(trnsim):
    x = torch.randn(3, 4)
    t = x.to("trnsim")
    assert type(t) is torch.Tensor
    assert t.device == torch.device("trnsim", 0)
    assert torch.device("trnsim").type == "trnsim"
    assert torch.equal(t.cpu(), x)
    assert "device='trnsim:0'" in repr(t)


def test_factories_math_and_dtypes(trnsim):
    z = torch.zeros(2, 3, device="trnsim")
    o = torch.ones(2, 3, device="trnsim", dtype=torch.bfloat16)
    r = torch.arange(6, device="trnsim").reshape(2, 3)
    assert z.device.type == o.device.type == r.device.type == "trnsim"
    assert o.dtype == torch.bfloat16
    y = (z + 1) * r
    assert torch.equal(y.cpu(), torch.arange(6.0).reshape(2, 3))
    assert r.sum().item() == 15


SCALAR_OPERAND_CASES = {
    "remainder": lambda x: x % 5,
    "rremainder": lambda x: 7 % (x + 1),
    "fmod": lambda x: torch.fmod(x, 3),
    "bitwise_and": lambda x: x & 3,
    "bitwise_xor": lambda x: x ^ 3,
    "bitwise_or": lambda x: x | 8,
    "in_place_remainder": lambda x: x.clone().remainder_(4),
    "in_place_and": lambda x: x.clone().bitwise_and_(1),
    "float_remainder": lambda x: x.float() % 2.5,
    "int_tensor_float_scalar": lambda x: torch.fmod(x, 2.5),
    "half_keeps_half": lambda x: x.half() % 1.5,
    "zero_dim_half": lambda x: x.half()[3] % 2.5,
}


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
@pytest.mark.parametrize("case", sorted(SCALAR_OPERAND_CASES))
def test_python_number_operands_match_cpu(trnsim, case, dtype):
    # Scalar overloads hand the Tensor overload a wrapped number: values and result dtype
    # must be CPU's (hashing embeddings compute ids % buckets on the device).
    op = SCALAR_OPERAND_CASES[case]
    host = torch.arange(12, dtype=dtype)
    got = op(host.to("trnsim"))
    want = op(host)
    assert got.device.type == "trnsim" and got.dtype == want.dtype
    assert torch.equal(got.cpu(), want)


def test_views_and_in_place_ops_share_memory(trnsim):
    t = torch.zeros(2, 3, device="trnsim")
    row = t[0]
    row.add_(5)
    t.t()[2, 1] = 7  # write through a transposed view
    col = t.unsqueeze(0)
    col.unsqueeze_(0)  # an in-place view op changes only the view's metadata
    assert col.shape == (1, 1, 2, 3)
    assert t.cpu().tolist() == [[5.0, 5.0, 5.0], [0.0, 0.0, 7.0]]
    assert row._version == t._version > 0


def test_data_assignment_is_seen_by_later_ops(trnsim):
    p = torch.nn.Parameter(torch.ones(4, device="trnsim"))
    assert (p * 2).sum().item() == 8
    p.data = torch.full((4,), 3.0, device="trnsim")
    assert (p * 2).sum().item() == 24


def test_autograd_and_optimizer_match_cpu(trnsim):
    torch.manual_seed(0)
    cpu_model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.GELU(), torch.nn.Linear(8, 1))
    dev_model = copy.deepcopy(cpu_model).to("trnsim")
    x = torch.randn(16, 4)
    for model, inp in ((cpu_model, x), (dev_model, x.to("trnsim"))):
        opt = torch.optim.AdamW(model.parameters(), lr=0.1)
        for _ in range(3):
            model(inp).pow(2).mean().backward()
            opt.step()
            opt.zero_grad()
    for a, b in zip(cpu_model.parameters(), dev_model.parameters()):
        assert b.device.type == "trnsim"
        torch.testing.assert_close(b.cpu(), a, rtol=1e-5, atol=1e-6)


def test_state_dict_save_and_load(trnsim, tmp_path):
    model = torch.nn.Linear(3, 2).to("trnsim")
    path = tmp_path / "m.pt"
    torch.save(model.state_dict(), path)
    loaded = torch.load(path)
    assert loaded["weight"].device.type == "trnsim"
    assert torch.equal(loaded["weight"].cpu(), model.weight.detach().cpu())
    on_cpu = torch.load(path, map_location="cpu")
    assert on_cpu["bias"].device.type == "cpu"
    buf = io.BytesIO()
    torch.save(torch.arange(4, device="trnsim"), buf)
    buf.seek(0)
    assert torch.load(buf).cpu().tolist() == [0, 1, 2, 3]


def test_deepcopy_copies_memory(trnsim):
    model = torch.nn.Linear(3, 2).to("trnsim")
    twin = copy.deepcopy(model)
    assert twin.weight.device.type == "trnsim"
    assert twin.weight.data_ptr() != model.weight.data_ptr()
    assert torch.equal(twin.weight.cpu(), model.weight.cpu())


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_autocast_lowers_matmuls_keeps_softmax_fp32(trnsim, dtype):
    lin = torch.nn.Linear(4, 4).to("trnsim")
    x = torch.randn(2, 4, device="trnsim")
    with torch.autocast("trnsim", dtype=dtype):
        y = lin(x)
        s = torch.softmax(y, -1)
    assert y.dtype == dtype
    assert s.dtype == torch.float32
    assert lin(x).dtype == torch.float32  # outside the block


def test_accelerator_api_and_memory_stats(trnsim):
    assert torch.accelerator.current_accelerator().type == "trnsim"
    assert torch.accelerator.device_count() == 1
    torch.accelerator.synchronize()
    gc.collect()  # earlier tests' garbage must not be freed inside the measured window
    before = torch.accelerator.memory_allocated()
    big = torch.empty(1 << 20, device="trnsim")
    assert torch.accelerator.memory_allocated() >= before + (4 << 20)
    assert torch.accelerator.max_memory_allocated() >= before + (4 << 20)
    assert torch.accelerator.memory_stats()["allocated_bytes.all.current"] == torch.trnsim.memory_allocated()
    del big
    gc.collect()
    assert torch.accelerator.memory_allocated() == before


def test_training_loop_does_not_leak(trnsim):
    from sweeper.devices.trnsim import storage

    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)).to("trnsim")
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(4, 8, device="trnsim")

    def step() -> None:
        model(x).sum().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(3):
        step()
    gc.collect()
    live = storage.live_allocations()
    for _ in range(20):
        step()
    gc.collect()
    assert storage.live_allocations() == live


def test_import_is_idempotent(trnsim):
    import importlib

    importlib.reload(importlib.import_module("sweeper.devices.trnsim"))
    trnsim.ensure_registered()
    assert torch.zeros(1, device="trnsim").device.type == "trnsim"


def test_registering_after_a_backward_fails_with_a_clear_error():
    # PyTorch sizes autograd's device queues at the first backward: registered later,
    # trnsim could run no backward at all, so the import says so instead.
    code = (
        "import torch\n"
        "torch.ones(1, requires_grad=True).sum().backward()\n"
        "import sweeper.devices.trnsim\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines()[-1] == (
        "sweeper.devices.trnsim.errors.LateRegistrationError: trnsim was registered after this process's first "
        "backward pass, so autograd cannot run on it: import sweeper.devices.trnsim before any backward"
    )


def test_random_ops_repeat_under_a_seed(trnsim):
    torch.manual_seed(7)
    a = torch.rand(5, device="trnsim")
    d = torch.nn.functional.dropout(torch.ones(64, device="trnsim"), 0.5)
    torch.manual_seed(7)
    b = torch.rand(5, device="trnsim")
    e = torch.nn.functional.dropout(torch.ones(64, device="trnsim"), 0.5)
    assert torch.equal(a.cpu(), b.cpu()) and torch.equal(d.cpu(), e.cpu())
    assert 0 < int((d.cpu() == 0).sum()) < 64


def test_no_hidden_state_travels_with_tensors(trnsim, tmp_path):
    model = torch.nn.Linear(64, 64)
    cpu_path, dev_path = tmp_path / "cpu.pt", tmp_path / "dev.pt"
    torch.save(model.state_dict(), cpu_path)
    model.to("trnsim")
    model(torch.randn(2, 64, device="trnsim")).sum().backward()  # every parameter used
    assert model.weight.__dict__ == {}
    torch.save(model.state_dict(), dev_path)
    assert abs(dev_path.stat().st_size - cpu_path.stat().st_size) < 512
    assert copy.deepcopy(model.weight).__dict__ == {}
