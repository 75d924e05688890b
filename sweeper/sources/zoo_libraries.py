"""The zoo's entries of the other libraries (timm, open_clip, diffusers, pyannote, speechbrain,
vocos), placed among transformers' model types in one popularity order (the Hub's download ranks: timm's
MobileNet and ResNet sit beside BERT, Stable Diffusion beside T5).

An entry is the Hub repo that is its library's canonical example; the library layer
builds it offline (tiny) from the id alone, as it does a catalog row.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from sweeper.records import ModelRef

# transformers model type -> (library, Hub id, task) entries listed right after it. A
# transformers entry is a repo of that model type the zoo's own entry does not stand for
# (a quantized checkpoint: its method's layers and kernels, not the float build's).
AFTER: dict[str, tuple[tuple[str, str, str], ...]] = {
    # bitsandbytes NF4 (unsloth's QLoRA bases, 3.8M downloads in the top 1,000).
    "llama": (("transformers", "unsloth/Llama-3.2-3B-Instruct-unsloth-bnb-4bit", "text-generation"),),
    "roberta": (("timm", "timm/mobilenetv3_small_100.lamb_in1k", "image-classification"),
                ("timm", "timm/resnet50.a1_in1k", "image-classification")),
    "t5": (("diffusers", "stable-diffusion-v1-5/stable-diffusion-v1-5", "text-to-image"),),
    "vit": (("timm", "timm/vit_base_patch16_224.augreg2_in21k_ft_in1k", "image-classification"),),
    "clip": (("open_clip", "laion/CLIP-ViT-B-32-laion2B-s34B-b79K", "zero-shot-image-classification"),),
    "whisper": (("pyannote-audio", "pyannote/segmentation-3.0", "voice-activity-detection"),),
    # Below the default top 50 (``make sweep`` stays within its time budget).
    "gptj": (("diffusers", "stabilityai/stable-diffusion-xl-base-1.0", "text-to-image"),
                ("pyannote-audio", "pyannote/wespeaker-voxceleb-resnet34-LM", "audio-classification"),
                # speechbrain's speaker embedding (1.8 M downloads) beside pyannote's.
                ("speechbrain", "speechbrain/spkrec-ecapa-voxceleb", "audio-classification")),
    "mamba": (("timm", "timm/efficientnet_b0.ra_in1k", "image-classification"),
              ("speechbrain", "speechbrain/lang-id-voxlingua107-ecapa", "audio-classification")),
    "llava": (("open_clip", "timm/ViT-SO400M-14-SigLIP-384", "zero-shot-image-classification"),),
    "qwen2_vl": (("timm", "timm/convnext_tiny.in12k_ft_in1k", "image-classification"),
               ("diffusers", "black-forest-labs/FLUX.1-dev", "text-to-image")),
    "blip": (("diffusers", "stabilityai/stable-diffusion-3.5-medium", "text-to-image"),
                 ("diffusers", "lllyasviel/sd-controlnet-canny", "image-to-image")),
    "camembert": (("open_clip", "laion/CLIP-convnext_base_w-laion2B-s13B-b82K-augreg", "zero-shot-image-classification"),),
    # A vocoder beside transformers' text-to-speech family (SpeechT5 ends in one).
    "speecht5": (("vocos", "charactr/vocos-mel-24khz", "audio-to-audio"),),
}


def library_ref(library: str, model_id: str, task: str, after: str, rank: int) -> ModelRef:
    """The zoo's ref of one entry of ``AFTER`` (placed after model type ``after``)."""
    return ModelRef(model_id=model_id, rank=rank, pipeline_tag=task, library_name=library, source="zoo",
                    model_type=after if library == "transformers" else None)


def merged(model_types: Iterable[str]) -> Iterator[str | tuple[str, str, str, str]]:
    """transformers' model types in their order, each followed by the entries placed after it
    (with the model type they follow)."""
    for model_type in model_types:
        yield model_type
        for entry in AFTER.get(model_type, ()):
            yield (*entry, model_type)
