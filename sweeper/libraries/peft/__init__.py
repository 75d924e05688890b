"""peft: an adapter on a transformers base model (``library``)."""
