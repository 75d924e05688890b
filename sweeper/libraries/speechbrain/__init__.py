"""speechbrain: speaker, language and sound identification models (``library``), built from a name
table of the released sizes (``parts``), and SepFormer source separation (``separation``)."""
