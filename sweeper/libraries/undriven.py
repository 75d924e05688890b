"""PyTorch libraries of the Hub the sweeper knows and does not drive, and exactly why.

A row of one of these ends ``unsupported_library`` with the reason from this table (a
dependency conflict with the stack the sweep runs on, or a licence the project does not
take on), so the report says what would have to change, not only "not supported". A plugin
(entry-point group ``sweeper.libraries``) can still add any of them.
"""

from __future__ import annotations

from sweeper.libraries.base import package_version

# Hub library_name -> (why it is not driven, the installed package that conflicts or None).
UNDRIVEN: dict[str, tuple[str, str | None]] = {
    "flair": ("flair 0.15.1 (the newest release) requires transformers<5", "transformers"),
    "gliner": ("gliner 0.2.29 (the newest release) requires transformers<5.17", "transformers"),
    "granite-tsfm": ("granite-tsfm 0.3.11 (the newest release) requires torch<2.12", "torch"),
    "nemo": ("nemo_toolkit 3.0 is not a dependency: its core extra pins lightning<=2.4.0 and its ASR/TTS models "
             "need its asr/tts extras, a stack larger than everything else here", None),
    "ultralytics": ("ultralytics is AGPL-3.0, which the project does not take on as a dependency", None),
}


def why_not_driven(library: str) -> str | None:
    """The reason ``library`` is not driven, with the conflicting package's installed
    version, or None when the table does not know it."""
    found = UNDRIVEN.get(library)
    if found is None:
        return None
    why, conflict = found
    if conflict is not None:
        why += f" (installed: {conflict} {package_version(conflict)})"
    return f"{why}; a plugin (entry-point group sweeper.libraries) can add it"
