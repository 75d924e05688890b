"""What trnsim costs over the CPU it runs on: time per training step and per op.

Runs a training step (forward, backward, AdamW) of a tiny BERT and of a mid-size BERT
(hidden 256, 4 layers, seq 128) on the CPU and on trnsim, single-threaded (so the ratio
measures the simulator, not OpenMP scheduling), and reports the ratio of the best step times
(process CPU time, timed alternately: on shared cores the wall clock measures the
neighbours). The cost
per op (``us_per_op``) is the mean extra time of one small op reaching the simulator
(add, add_, view, mm on 16x16), measured in a loop against the same op on the CPU; each
model line also shows the extra time per step divided by the aten ops dispatched in it
(heavier: foreach optimizer ops and large copies count as one op each).

    nice -n 10 .venv/bin/python benchmarks/trnsim_overhead.py [--steps N] [--quick]

Last line: ``trnsim_overhead mid=<ratio> tiny=<ratio> us_per_op=<µs>``.
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable

import torch

TARGETS = {"mid": 1.25, "tiny": 3.0, "us_per_op": 6.0}
PHASES = ("forward", "backward", "optimizer")


def bert(hidden: int, layers: int, seq: int, batch: int) -> tuple[torch.nn.Module, torch.Tensor]:
    """A randomly initialised BertForMaskedLM and a batch of token ids."""
    from transformers import BertConfig, BertForMaskedLM

    cfg = BertConfig(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=max(2, hidden // 64),
                     intermediate_size=4 * hidden, vocab_size=1000, max_position_embeddings=max(64, seq))
    torch.manual_seed(0)
    return BertForMaskedLM(cfg), torch.randint(0, 1000, (batch, seq))


def step_fn(model: torch.nn.Module, ids: torch.Tensor, device: str) -> Callable[[], tuple[float, ...]]:
    """One training step of ``model`` on ``device`` (weights copied there once); it returns
    the CPU time of its forward, backward and optimizer phases."""
    model = model.to(device)
    ids = ids.to(device)
    # PyTorch's defaults per device: single-tensor AdamW on the CPU, the foreach
    # implementation on an accelerator (PrivateUse1 included), as a user would get.
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step() -> tuple[float, ...]:
        start = clock()
        loss = model(input_ids=ids, labels=ids).loss
        forward = clock()
        loss.backward()
        backward = clock()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return forward - start, backward - forward, clock() - backward

    return step


# CPU time of the whole process (all threads: trnsim's backward runs on the autograd
# engine's device thread). Other processes on shared cores slow the wall clock, not this.
clock = time.process_time


Step = Callable[[], tuple[float, ...]]


def interleaved(cpu: Step, trn: Step, steps: int, warmup: int = 2) -> tuple[list[tuple[float, ...]], ...]:
    """Phase times of every step of each, timed alternately so both see the same machine
    load (the cores are shared; the minimum is the least disturbed run)."""
    for _ in range(warmup):
        cpu(), trn()
    cpu_times, trn_times = [], []
    for _ in range(steps):
        cpu_times.append(cpu())
        trn_times.append(trn())
    return cpu_times, trn_times


def phase_line(cpu_times: list[tuple[float, ...]], trn_times: list[tuple[float, ...]]) -> str:
    """Best time of each phase on both devices: where the extra time of a step lies. (The
    optimizer differs by design: PyTorch gives an accelerator the foreach AdamW and the CPU
    the single-tensor one, whose passes stay in cache; so part of its extra is not trnsim's.)"""
    parts = []
    for i, phase in enumerate(PHASES):
        cpu, trn = min(t[i] for t in cpu_times), min(t[i] for t in trn_times)
        parts.append(f"{phase} {cpu * 1e3:.1f}/{trn * 1e3:.1f} ms (+{(trn - cpu) * 1e3:.1f})")
    return "      cpu/trnsim per phase, best of each: " + ", ".join(parts)


def ops_per_step(step: Step) -> int:
    """Aten ops trnsim dispatches in one step."""
    from sweeper.devices import trnsim

    with trnsim.recording() as rec:
        step()
    return sum(rec.ops.values())


def compare(name: str, hidden: int, layers: int, seq: int, batch: int, steps: int) -> tuple[float, float]:
    """(trnsim / CPU time ratio, extra µs per op) for one model size."""
    model, ids = bert(hidden, layers, seq, batch)
    cpu_model, _ = bert(hidden, layers, seq, batch)
    cpu_model.load_state_dict(model.state_dict())
    trn_step = step_fn(model, ids, "trnsim")
    cpu_times, trn_times = interleaved(step_fn(cpu_model, ids, "cpu"), trn_step, steps)
    cpu, trn = min(sum(t) for t in cpu_times), min(sum(t) for t in trn_times)
    ops = ops_per_step(trn_step)
    us = (trn - cpu) / ops * 1e6
    print(f"{name:5s} hidden={hidden} layers={layers} seq={seq} batch={batch}: cpu {cpu * 1e3:8.2f} ms  "
          f"trnsim {trn * 1e3:8.2f} ms  ratio {trn / cpu:5.2f}  ops/step {ops}  extra/op {us:5.1f} µs")
    print(phase_line(cpu_times, trn_times))
    return trn / cpu, us


def micro_ops(n: int = 20000) -> float:
    """Mean extra µs per op of a mix of small ops (out-of-place, in-place, view, matmul):
    the cost of one op reaching the simulator, the number the per-op target is about."""
    a, b = torch.randn(16, 16), torch.randn(16, 16)
    ops = {
        "add": lambda x, y: x.add(y),
        "add_": lambda x, y: x.add_(y),
        "view": lambda x, y: x.view(256),
        "mm": lambda x, y: x.mm(y),
    }

    def loop(fn: Callable, x: torch.Tensor, y: torch.Tensor) -> float:
        start = clock()
        for _ in range(n):
            fn(x, y)
        return (clock() - start) / n

    extras = []
    for name, fn in ops.items():
        ta, tb = a.to("trnsim"), b.to("trnsim")
        cpu = min(loop(fn, a.clone(), b) for _ in range(3))
        trn = min(loop(fn, ta, tb) for _ in range(3))
        extras.append((trn - cpu) * 1e6)
        print(f"micro {name:5s}: cpu {cpu * 1e6:6.2f} µs  trnsim {trn * 1e6:6.2f} µs  extra {extras[-1]:6.2f} µs")
    return sum(extras) / len(extras)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10, help="timed steps per model and device")
    parser.add_argument("--quick", action="store_true", help="fewer steps (a smoke run)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    torch.set_num_threads(1)
    import sweeper.devices.trnsim  # noqa: F401 - registers the device

    steps = 3 if args.quick else args.steps
    tiny, _ = compare("tiny", 32, 2, 16, 2, steps * 3)
    mid, _ = compare("mid", 256, 4, 128, 2, steps)
    per_op = micro_ops(2000 if args.quick else 20000)
    print(f"targets: mid <= {TARGETS['mid']}, tiny <= {TARGETS['tiny']}, us_per_op <= {TARGETS['us_per_op']}")
    print(f"trnsim_overhead mid={mid:.2f} tiny={tiny:.2f} us_per_op={per_op:.1f}")


if __name__ == "__main__":
    main()
