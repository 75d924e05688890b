"""What comparing a model's gradients costs: ``compare_grads`` against a tensor-by-tensor loop.

    python benchmarks/gradient_compare.py [--repeats N]

The backward stage compares every parameter's gradient twice per model (the device's
against the CPU's, and the device's second run against its first). The gradients here
have the parameter shapes of two models the sweep builds at its tiny size (a BERT with a
full vocabulary: few large tensors; a ConvNeXt: many small ones), with noise on one side.
The loop is ``numerics.compare`` per tensor, as the comparison was made before; both
must give the same figures (checked), and the times of each are printed.
Last line: ``gradient_compare bert_ms=<a> bert_loop_ms=<b> convnext_ms=<c> convnext_loop_ms=<d>``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

import sweeper  # noqa: E402,F401 - makes torchvision importable beside the CPU torch, before transformers
from sweeper.checks.numerics import Tolerance, compare, compare_grads  # noqa: E402


def shapes(name: str) -> dict[str, tuple[int, ...]]:
    """The parameter shapes of a small ``name`` model (built on meta: no memory)."""
    import transformers

    if name == "bert":
        config = transformers.BertConfig(hidden_size=128, num_hidden_layers=4, num_attention_heads=4,
                                         intermediate_size=512)
        cls = transformers.BertForMaskedLM
    else:
        config = transformers.ConvNextConfig(hidden_sizes=[32, 64, 128, 256], depths=[2, 2, 6, 2])
        cls = transformers.ConvNextForImageClassification
    with torch.device("meta"):
        model = cls(config)
    return {n: tuple(p.shape) for n, p in model.named_parameters()}


def tensor_by_tensor(got: dict[str, torch.Tensor], ref: dict[str, torch.Tensor], tol: Tolerance) -> tuple[float, bool]:
    """The comparison one tensor at a time: the largest gap and whether all are within."""
    names = [n for n in ref if n in got and got[n].shape == ref[n].shape]
    scale = max(float(ref[n].abs().max()) if ref[n].numel() else 0.0 for n in names)
    diffs = [compare(got[n], ref[n], Tolerance(tol.atol * scale, tol.rtol)) for n in names]
    return max(d.max_abs for d in diffs), all(d.within for d in diffs)


def timed(fn, repeats: int) -> float:
    """Milliseconds per call, the best of ``repeats``."""
    fn()
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    torch.set_num_threads(1)  # as a sweep's worker runs
    gen = torch.Generator().manual_seed(0)
    tol = Tolerance(1e-3, 1e-3)
    figures = {}
    for name in ("bert", "convnext"):
        ref = {n: torch.randn(s, generator=gen) for n, s in shapes(name).items()}
        got = {n: t + 1e-5 * torch.randn(t.shape, generator=gen) for n, t in ref.items()}
        fused = compare_grads(got, ref, tol)
        loop = tensor_by_tensor(got, ref, tol)
        assert fused is not None and (fused.max_abs, fused.within) == loop, (fused, loop)
        figures[f"{name}_ms"] = timed(lambda got=got, ref=ref: compare_grads(got, ref, tol), args.repeats)
        figures[f"{name}_loop_ms"] = timed(lambda got=got, ref=ref: tensor_by_tensor(got, ref, tol), args.repeats)
        count = sum(t.numel() for t in ref.values())
        print(f"{name}: {len(ref)} tensors, {count:,} values: compare_grads {figures[name + '_ms']:.1f} ms, "
              f"tensor by tensor {figures[name + '_loop_ms']:.1f} ms (same figures)")
    print("gradient_compare " + " ".join(f"{k}={v:.1f}" for k, v in figures.items()))


if __name__ == "__main__":
    main()
