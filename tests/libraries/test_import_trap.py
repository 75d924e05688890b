"""The torchvision trap: PyPI's torchvision (a CUDA build) beside the CPU torch.

Each test runs in a fresh interpreter: whether torchvision imports depends on what ran
before its first import in the process, which the test process has long settled.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap

import pytest

# find_spec, not importorskip: importing torchvision here, before sweeper, is the trap itself.
pytestmark = pytest.mark.skipif(importlib.util.find_spec("torchvision") is None,
                                reason="the libraries extra is not installed (make install adds it)")


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_transformers_timm_and_open_clip_import_side_by_side():
    out = _run("""
        import sweeper
        from transformers import BertModel
        import timm, open_clip, torch
        from transformers.models.sam3 import modeling_sam3  # imports torchvision itself
        from sweeper.libraries import vision_compat
        assert modeling_sam3.torchvision is not None
        model = timm.create_model("resnet18", pretrained=False, num_classes=3)
        print(vision_compat.state, tuple(model(torch.randn(2, 3, 32, 32)).shape))
    """)
    state, shape = out.split(" ", 1)
    assert state in ("compat", "native")
    assert shape.strip() == "(2, 3)"


def test_nms_runs_in_plain_pytorch():
    out = _run("""
        import sweeper, torch, torchvision
        boxes = torch.tensor([[0, 0, 10, 10], [1, 1, 11, 11], [50, 50, 60, 60], [0, 0, 10, 9.]])
        scores = torch.tensor([0.8, 0.9, 0.7, 0.1])
        print(torch.ops.torchvision.nms(boxes, scores, 0.5).tolist())
    """)
    # box 1 (best) suppresses boxes 0 and 3 (IoU > 0.5); box 2 is apart.
    assert out.strip() == "[1, 2]"


def test_without_the_fix_transformers_breaks():
    """The trap itself: when the extension cannot load and nothing defines the schemas,
    torchvision (and a transformers class that imports it) fails to import. A matching
    native build has no trap, so the test has nothing to show there."""
    out = _run("""
        from sweeper.libraries.vision_compat import _extension
        import importlib.util, torch
        try:
            torch.ops.load_library(str(_extension(importlib.util.find_spec("torchvision"))))
            print("native")
        except OSError:
            print("cuda-wheel")
    """)
    if out.strip() == "native":
        pytest.skip("torchvision's extension loads here: no trap to show")
    done = subprocess.run([sys.executable, "-c", "import torchvision"], capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "torchvision::nms does not exist" in done.stderr


needs_torchaudio = pytest.mark.skipif(importlib.util.find_spec("torchaudio") is None,
                                      reason="torchaudio is not installed (the libraries extra adds it with pyannote.audio)")


@needs_torchaudio
def test_pyannote_imports_beside_transformers_and_timm_and_its_audio_front_ends_run():
    out = _run("""
        import sweeper
        from transformers import BertModel
        import timm, torch
        import pyannote.audio
        from pyannote.audio.models.embedding import WeSpeakerResNet34
        from torchaudio.compliance import kaldi
        from torchaudio.transforms import MFCC
        from sweeper.libraries import audio_compat
        wave = torch.randn(1, 16000)
        fbank = kaldi.fbank(wave, num_mel_bins=80, sample_frequency=16000)
        mfcc = MFCC(sample_rate=16000, n_mfcc=20)(wave)
        print(audio_compat.state, tuple(fbank.shape), tuple(mfcc.shape))
    """)
    state, rest = out.split(" ", 1)
    assert state in ("compat", "native")
    assert rest.strip() == "(98, 80) (1, 20, 81)"


@needs_torchaudio
def test_without_the_fix_torchaudio_does_not_import():
    """The trap: torchaudio's wheel is a CUDA build; its extension loader raises beside the
    CPU torch unless audio_compat tells it the extension is not built."""
    done = subprocess.run([sys.executable, "-c", "import torchaudio"], capture_output=True, text=True, timeout=300)
    if done.returncode == 0:
        pytest.skip("torchaudio's extension loads here: no trap to show")
    assert "_torchaudio" in done.stderr and "OSError" in done.stderr
