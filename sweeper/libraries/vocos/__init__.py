"""vocos: neural vocoders (``library``), built small and run as copy-synthesis (``parts``)."""
