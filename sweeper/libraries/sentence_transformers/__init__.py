"""sentence-transformers: a transformers encoder then pooling and normalisation (``library``);
which pooling and normalisation a repo has (``layout``)."""
