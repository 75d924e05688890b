"""What a sweep keeps: its folder (``folder`` names every file, ``lock``, ``sweep_meta``), the append-only record ``store``, and check reuse (``fingerprint``, ``reuse``, ``cache``)."""
