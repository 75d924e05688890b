"""speechbrain's SepFormer source separation, built small, as ``SepformerSeparation`` runs it.

``separate_batch``: a convolutional encoder (kernel 16, stride 8) makes the mixture's
representation, the dual-path transformer mask network (intra- and inter-chunk
transformers) one mask per source, each masked representation is decoded by a transposed
convolution, and the sources are padded or cut to the mixture's length. The sizes are the
released repos' (speechbrain's WSJ0Mix ``sepformer.yaml``: 256 filters, 2 dual-path layers of
8 + 8 transformer layers, d_model 256, 8 heads, feed-forward 1024, chunks of 250); tiny keeps
the layout, narrow and one layer deep. No FFT: unlike the Fbank models, it can run on a
device without complex dtypes.
"""

from __future__ import annotations

from typing import Any

import torch

BATCH = 2
# Tiny: 1 s mixtures; random: the 4 s crops speechbrain's recipes train on.
TINY_SECONDS = 1.0
FULL_SECONDS = 4.0
KERNEL = 16
FULL = {"channels": 256, "layers": 8, "nhead": 8, "d_ffn": 1024, "dual_path_layers": 2, "chunk": 250}
TINY = {"channels": 16, "layers": 1, "nhead": 2, "d_ffn": 32, "dual_path_layers": 1, "chunk": 50}


class Separator(torch.nn.Module):
    """Encoder -> dual-path transformer masks -> one decoded waveform per source; the output
    is (batch, samples, sources) and ``loss`` the squared distance to seeded sources."""

    def __init__(self, spec: Any, tiny: bool) -> None:
        super().__init__()
        from speechbrain.lobes.models.dual_path import Decoder, Dual_Path_Model, Encoder, SBTransformerBlock

        size = TINY if tiny else FULL
        self.num_spks = spec.num_spks
        self.encoder = Encoder(kernel_size=KERNEL, out_channels=size["channels"])

        def transformer() -> Any:
            return SBTransformerBlock(num_layers=size["layers"], d_model=size["channels"], nhead=size["nhead"],
                                      d_ffn=size["d_ffn"], dropout=0, use_positional_encoding=True, norm_before=True)

        self.masknet = Dual_Path_Model(num_spks=spec.num_spks, in_channels=size["channels"], out_channels=size["channels"],
                                       num_layers=size["dual_path_layers"], K=size["chunk"], intra_model=transformer(),
                                       inter_model=transformer(), norm="ln", linear_layer_after_inter_intra=False,
                                       skip_around_intra=True)
        self.decoder = Decoder(in_channels=size["channels"], out_channels=1, kernel_size=KERNEL, stride=KERNEL // 2,
                               bias=False)

    def forward(self, mixture: Any, target: Any) -> Any:
        from transformers.utils import ModelOutput

        mix_w = self.encoder(mixture)
        est_mask = self.masknet(mix_w)
        sep_h = torch.stack([mix_w] * self.num_spks) * est_mask
        est = torch.cat([self.decoder(sep_h[i]).unsqueeze(-1) for i in range(self.num_spks)], dim=-1)
        # The encoder's stride drops the last samples: pad (or cut) back to the mixture's length.
        length = mixture.shape[1]
        est = torch.nn.functional.pad(est, (0, 0, 0, length - est.shape[1])) if est.shape[1] < length else est[:, :length]
        return ModelOutput(output=est, loss=torch.nn.functional.mse_loss(est.float(), target.float()))


def mixture_and_sources(spec: Any, seed: int, dtype: Any, tiny: bool) -> tuple[Any, Any]:
    """``spec``: ``library``'s SeparatorSpec (sources, sample rate; not imported: that
    module imports this one). A seeded (BATCH, samples) mixture and the (BATCH, samples, sources) targets it sums."""
    gen = torch.Generator().manual_seed(seed)
    samples = int((TINY_SECONDS if tiny else FULL_SECONDS) * spec.sample_rate)
    sources = 0.1 * torch.randn(BATCH, samples, spec.num_spks, generator=gen)
    return sources.sum(-1).to(dtype), sources.to(dtype)
