"""Judging generated tokens against the CPU's: equal, a tie, or a numerics gap.

Greedy decoding turns a tiny difference in logits into a different token whenever the two
best logits are close: a device that rounds differently is not wrong when the CPU itself
could barely tell the two apart. So a device whose tokens leave the CPU's is judged at the
first step where they part, on the CPU's own logits there: the two best within the
numerics tolerance is a tie (recorded, not a failure); a clear winner the device did not
pick is a numerics verdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from sweeper.checks.tolerances import Tolerance


@dataclass(frozen=True)
class TokenVerdict:
    """How a run's new tokens compare with the CPU's."""

    tokens_equal: bool
    # "equal" | "tie" | "numerics" | "shape" (the runs made different numbers of tokens) |
    # "not_judged" (the model's own output moves from run to run: ``why``)
    verdict: str
    divergence: dict[str, Any] | None = None
    max_logit_diff: float | None = None  # over the steps both runs shared a prefix
    why: str | None = None

    @property
    def passed(self) -> bool:
        return self.verdict in ("equal", "tie", "not_judged")

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"tokens_equal": self.tokens_equal, "verdict": self.verdict}
        if self.why is not None:
            data["why"] = self.why
        if self.divergence is not None:
            data["first_divergence"] = self.divergence
        if self.max_logit_diff is not None:
            data["max_logit_diff"] = self.max_logit_diff
        return data


def judge(got: torch.Tensor, want: torch.Tensor, cpu_logits: list[torch.Tensor] | None,
          got_logits: list[torch.Tensor] | None, tol: Tolerance) -> TokenVerdict:
    """``got`` (the device's new tokens, batch x steps) against ``want`` (the CPU's), with
    the CPU's per-step logits (each batch x vocab) to judge a divergence by."""
    got, want = got.detach().cpu(), want.detach().cpu()
    if got.shape != want.shape:
        return TokenVerdict(False, "shape", {"device_shape": list(got.shape), "cpu_shape": list(want.shape)})
    shared = _shared_steps(got, want)
    logit_diff = _logit_diff(got_logits, cpu_logits, shared)
    if torch.equal(got, want):
        return TokenVerdict(True, "equal", max_logit_diff=logit_diff)
    mismatch = (got != want).nonzero()
    first_step = int(mismatch[:, 1].min())
    row = int(mismatch[mismatch[:, 1] == first_step][0, 0])
    found: dict[str, Any] = {"step": first_step, "row": row, "cpu_token": int(want[row, first_step]),
                             "device_token": int(got[row, first_step])}
    if not cpu_logits or first_step >= len(cpu_logits):
        # Nothing proves the device wrong: a numerics verdict needs the CPU's margin.
        why = "no CPU logits at the first divergent step to judge it by (the model's generate returned none)"
        return TokenVerdict(False, "not_judged", found, logit_diff, why=why)
    scores = cpu_logits[first_step][row].detach().to("cpu", torch.float32)
    finite = scores[torch.isfinite(scores)]
    best = torch.topk(finite, 2).values if finite.numel() >= 2 else finite
    gap = float(best[0] - best[1]) if best.numel() == 2 else float("inf")
    # The same bound as the forward stage's: max(atol, rtol x the largest |logit|).
    bound = max(tol.atol, tol.rtol * float(finite.abs().max())) if finite.numel() else tol.atol
    device_pick = float(scores[found["device_token"]])
    found.update(cpu_top2_gap=gap, bound=bound, cpu_logit_of_device_token=device_pick,
                 device_token_gap=float(best[0]) - device_pick if best.numel() else None)
    # A tie: the device picked a token the CPU scored within the tolerance of its best.
    tie = best.numel() > 0 and float(best[0]) - device_pick <= bound
    return TokenVerdict(False, "tie" if tie else "numerics", found, logit_diff)


def _shared_steps(got: torch.Tensor, want: torch.Tensor) -> int:
    """How many steps both runs decoded from the same tokens (the first step where any row
    parts is the last whose logits are comparable)."""
    if got.shape != want.shape or not got.numel():
        return 0
    differ = (got != want).any(dim=0).nonzero()
    return int(differ[0]) + 1 if differ.numel() else got.shape[1]


def _logit_diff(got: list[torch.Tensor] | None, want: list[torch.Tensor] | None, steps: int) -> float | None:
    """The largest |device - CPU| logit over the steps both ran from the same prefix
    (equal non-finite values, masked tokens, count as equal)."""
    if not got or not want:
        return None
    largest = 0.0
    for step in range(min(steps, len(got), len(want))):
        a, b = got[step].detach().to("cpu", torch.float32), want[step].detach().to("cpu", torch.float32)
        if a.shape != b.shape:
            return None
        diff = (a - b).abs()
        diff[(a == b) | (a.isnan() & b.isnan())] = 0.0
        largest = max(largest, float(diff.nan_to_num(nan=float("inf")).max()) if diff.numel() else 0.0)
    return largest
