"""The id of a model built from its type's default config rather than a checkpoint.

The zoo names an entry so when no checkpoint of its own type is documented; the build
reads the id to know there is no repo to fetch a config from. Both sides read it here.
"""

from __future__ import annotations

# What a zoo entry is called when no checkpoint of its own type is documented: it is built
# from the type's default config, and says so (never a Hub link).
DEFAULT_CONFIG = " (default config)"


def default_config_id(model_type: str) -> str:
    """The id of a zoo entry built from ``model_type``'s default config."""
    return f"{model_type}{DEFAULT_CONFIG}"


def names_default_config(model_id: str) -> bool:
    """Whether ``model_id`` names a type's default config rather than a checkpoint (the
    ``zoo/<type>`` spelling of older records included)."""
    return model_id.startswith("zoo/") or model_id.endswith(DEFAULT_CONFIG)
