"""What image models of every library share: a seeded image batch, dtype casts, a
classification loss against fixed labels (its gradient reaches every class row, where
the mean of the logits gives each the same one)."""

from __future__ import annotations

from typing import Any

# A batch of two: batch norm in training needs more than one value per channel.
BATCH = 2


def images(size: int | tuple[int, int], *, seed: int, channels: int = 3, dtype: Any = None) -> Any:
    """A (BATCH, channels, H, W) batch of seeded standard-normal pixels."""
    import torch

    h, w = (size, size) if isinstance(size, int) else size
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(BATCH, channels, h, w, generator=gen, dtype=torch.float32).to(dtype or torch.float32)


def labels(num_classes: int, *, seed: int) -> Any:
    """BATCH fixed class indices below ``num_classes``."""
    import torch

    gen = torch.Generator().manual_seed(seed + 1)
    return torch.randint(0, max(num_classes, 1), (BATCH,), generator=gen)


def cross_entropy(output: Any, targets: dict[str, Any]) -> Any:
    """Cross-entropy of the first float output (logits) against ``targets['labels']``."""
    import torch

    from sweeper.libraries.outputs import first_float

    logits = first_float(output)
    return torch.nn.functional.cross_entropy(logits.float().reshape(logits.shape[0], -1), targets["labels"])


def torch_dtype(cfg: Any) -> Any:
    """The sweep's dtype as a torch dtype."""
    import torch

    return getattr(torch, cfg.device.dtype)
