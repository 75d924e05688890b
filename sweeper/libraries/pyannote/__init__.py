"""pyannote-audio: segmentation and embedding models and diarization pipelines (``library``),
built small with waveform inputs and losses (``parts``)."""
