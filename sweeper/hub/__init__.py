"""The Hugging Face Hub client's rules: where and whether to reach it and which secret stays home (``access``), polite retried traffic (``http``), one request rate per node (``rate``)."""
