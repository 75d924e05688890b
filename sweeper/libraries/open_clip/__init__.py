"""open_clip: CLIP-style image and text towers (``library``); the transformers text towers some
configs name, built offline from their released configs (``text``)."""
