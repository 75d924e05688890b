"""timm: image models named by the id, built tiny with their own size arguments (``library``)."""
