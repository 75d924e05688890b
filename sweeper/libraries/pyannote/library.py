"""pyannote-audio: speaker segmentation and embedding models, and diarization pipelines.

Which models a repo is comes from its id (a name table): a segmentation repo is PyanNet
with the speaker segmentation task's specifications, an embedding repo WeSpeakerResNet34 or
XVectorSincNet, a diarization pipeline its segmentation and embedding models (both
checked; the record lists them). Rows the snapshot names no library for are pyannote's
when their repo name says so plainly; the record then notes the library came from the id.

Weights are tiny or random: pyannote checkpoints are pickles (``pytorch_model.bin``), which
sweeper never loads. pyannote.audio imports torchaudio, whose PyPI wheel is a CUDA build;
see ``audio_compat``. pyannote.audio sends usage telemetry by default: it is turned off
before the package is imported, and Lightning's wrapper of ``torch.compile`` is undone after.
"""

from __future__ import annotations

import os
import re
import warnings
from typing import Any

from sweeper.libraries.base import Library, count_parameters, weights_unless_pickled
from sweeper.libraries.built import Built
from sweeper.records import ModelRef
from sweeper.settings.errors import ConfigError

PIPELINE = ("PyanNet", "WeSpeakerResNet34")
# Id patterns -> the pyannote.audio models (role, class) a repo is, first match wins.
ARCHITECTURES: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    (r"diarization", (("segmentation", "PyanNet"), ("embedding", "WeSpeakerResNet34"))),
    (r"wespeaker", (("embedding", "WeSpeakerResNet34"),)),
    (r"brouhaha|segmentation|voice-activity-detection|overlapped-speech-detection", (("segmentation", "PyanNet"),)),
    (r"embedding", (("embedding", "XVectorSincNet"),)),
)
# A row with no library named is pyannote's when its id names pyannote, or its repo name is
# exactly one of pyannote's own model or pipeline names.
CLAIMED_BY_ID = re.compile(r"pyannote|(speaker-)?diarization(-[\d.]+)?|segmentation(-[\d.]+)?|"
                           r"overlapped-speech-detection|voice-activity-detection")


class Pyannote(Library):
    """pyannote.audio models, built small from the id."""

    name = "pyannote"
    hub_names = frozenset({"pyannote-audio", "pyannote"})
    claimed_as = "pyannote-audio"
    packages = ("pyannote.audio", "torchaudio")

    def claims(self, ref: ModelRef) -> bool:
        """A row with no library or model type named whose id says it is pyannote's."""
        if ref.library_name or ref.model_type:
            return False
        repo = ref.model_id.lower().split("/", 1)[-1]
        return "pyannote" in ref.model_id.lower() or CLAIMED_BY_ID.fullmatch(repo) is not None

    def architecture(self, ref: ModelRef) -> str | None:
        """The pyannote model classes the id names ("A+B" for a pipeline), or None."""
        found = models(ref)
        return None if found is None else "+".join(cls for _, cls in found)

    def same_build(self, ref: ModelRef) -> Any:
        """The models the id names, and whether the library came from the id (a note)."""
        found = models(ref)
        return None if found is None else {"models": found, "library_from_id": self.claims(ref)}

    def build(self, ref: ModelRef, cfg: Any) -> Built:
        """Every model of the repo, tiny or random, run on one waveform batch."""
        self.require()
        weights = weights_unless_pickled(ref, cfg, "pyannote", "pytorch_model.bin")
        found = models(ref)
        if found is None:
            raise ConfigError(f"{ref.model_id}: the id names no pyannote model (segmentation, embedding, "
                              "wespeaker, diarization); its config.yaml is not read offline")
        _quiet_import()
        import torch

        from sweeper.libraries.pyannote import parts

        dtype = getattr(torch, cfg.device.dtype)
        torch.manual_seed(cfg.materialise.seed)
        built = {role: (cls, parts.BUILDERS[cls](weights == "tiny")) for role, cls in found}
        module = parts.Models(built).to(dtype).eval()
        audio = parts.waveforms(cfg.materialise.seed, dtype, parts.TINY_SECONDS if weights == "tiny" else parts.CHUNK_SECONDS)
        inputs = {"waveforms": audio}
        inputs.update({role: parts.targets(cls, model, audio.shape[-1], cfg.materialise.seed)
                       for role, (cls, model) in built.items()})
        notes = {"weights": weights, "models": ",".join(f"{role}={cls}" for role, cls in found),
                 "models_source": "name table", "waveform": f"{audio.shape[-1]} samples at {parts.SAMPLE_RATE} Hz",
                 "model_parameters": ",".join(f"{role}={count_parameters(m)}" for role, (_, m) in built.items())}
        if self.claims(ref):
            notes["library"] = "pyannote-audio (from the id; the listing names no library)"
        return Built(model=module, inputs=inputs, architecture=self.architecture(ref) or "", model_type=None,
                     num_parameters=count_parameters(module), has_labels=True, notes=notes)


def models(ref: ModelRef) -> tuple[tuple[str, str], ...] | None:
    """The (role, class) pairs of the models the id names, or None."""
    name = ref.model_id.lower()
    return next((found for pattern, found in ARCHITECTURES if re.search(pattern, name)), None)


def _quiet_import() -> None:
    """Import pyannote.audio with its telemetry off (it would post to pyannote's servers),
    without its warning that torchcodec cannot decode files (the sweep feeds tensors) and
    with ``torch.compile`` as it was."""
    os.environ["PYANNOTE_METRICS_ENABLED"] = "false"
    import torch

    # pyannote.audio imports Lightning, whose Fabric replaces torch.compile with a wrapper
    # that remembers its arguments. The sweep compiles models itself and never through
    # Fabric; left in place, the patch would be every later model's torch.compile, and
    # the worker recycles after a patch it finds (a fresh interpreter per pyannote model).
    compile_fn = torch.compile
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r"\s*torchcodec is not installed correctly")
            import pyannote.audio  # noqa: F401
    finally:
        torch.compile = compile_fn
