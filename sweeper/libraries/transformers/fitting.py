"""Fit a synthesised signal's feature width to the layer that first reads it.

Some front ends read features whose width no config field names directly (mel bins
stacked four frames deep, patches with a temporal depth under a family-specific key).
The forward then stops at the first projection with a width mismatch. Running it once
with pre-hooks on the projections finds that layer; when the tensor it received is one
of the synthesised inputs (same elements, same other axes), that input is rebuilt with
the width the layer expects: what a real feature extractor would have produced.
"""

from __future__ import annotations

from typing import Any

MAX_FITS = 2
AUDIO_SAMPLES = 16000


class _Mismatch(Exception):
    """Stops the probing forward at the first layer whose input width is off."""

    def __init__(self, name: str, shape: tuple[int, ...]) -> None:
        super().__init__(name)
        self.name, self.shape = name, shape


def fit_widths(model: Any, inputs: dict[str, Any]) -> dict[str, Any] | None:
    """Inputs with their feature widths fitted, or None when nothing needed fitting."""
    import torch

    fitted, changed = dict(inputs), False
    generator = torch.Generator().manual_seed(0)
    for _ in range(MAX_FITS):
        found = _first_mismatch(model, fitted)
        if found is None:
            break
        old = fitted[found.name]
        fitted[found.name] = torch.randn(found.shape, generator=generator).to(old.dtype)
        changed = True
    return fitted if changed else None


def _first_mismatch(model: Any, inputs: dict[str, Any]) -> _Mismatch | None:
    """Run a no-grad forward; the first Linear / LayerNorm / Conv fed a mis-sized input, if any."""
    import torch

    signals = {n: t for n, t in inputs.items() if torch.is_tensor(t) and t.is_floating_point()}
    handles = []
    for module in model.modules():
        if isinstance(module, (torch.nn.Linear, torch.nn.LayerNorm, torch.nn.Conv1d, torch.nn.Conv2d,
                               torch.nn.ConvTranspose1d)):
            handles.append(module.register_forward_pre_hook(_checker(signals)))
    from sweeper.libraries.pristine import pristine

    try:
        with torch.no_grad(), pristine(model):
            model(**dict(inputs))
    except _Mismatch as found:
        return found
    except Exception:  # noqa: BLE001 - another failure: nothing to fit here
        return None
    finally:
        for handle in handles:
            handle.remove()
    return None


def _checker(signals: dict[str, Any]) -> Any:
    import torch

    def hook(module: Any, args: tuple[Any, ...]) -> None:
        x = args[0] if args else None
        if not torch.is_tensor(x):
            return
        if isinstance(module, torch.nn.Linear):
            axis, want = -1, module.in_features
        elif isinstance(module, torch.nn.LayerNorm):
            if len(module.normalized_shape) != 1:
                return
            axis, want = -1, module.normalized_shape[0]
        else:
            axis, want = 1, module.in_channels
        if x.dim() < 2 or x.shape[axis] == want:
            return
        for name, t in signals.items():
            # The layer reads this input itself (maybe reshaped, or a conv's padded
            # copy): same elements, or the same leading axes up to the channels.
            same = t.numel() == x.numel() or (axis == 1 and t.shape[:2] == x.shape[:2])
            if same and t.dim() == x.dim() and t.shape[axis] == x.shape[axis]:
                shape = list(t.shape)
                shape[axis] = want
                if axis == 1 and want <= 2 and t.dim() == 3:
                    shape[2] = AUDIO_SAMPLES  # a mono / stereo conv front end reads a waveform
                raise _Mismatch(name, tuple(shape))

    return hook
