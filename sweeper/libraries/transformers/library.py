"""transformers: the sweeper's first library (its builder is ``build``, beside this module)."""

from __future__ import annotations

from typing import Any

from sweeper.libraries.base import Library
from sweeper.libraries.built import Built
from sweeper.records import ModelRef


class Transformers(Library):
    """Models of transformers, and rows with no library named (the Hub's default)."""

    name = "transformers"
    hub_names = frozenset({"transformers", ""})
    packages = ("transformers",)
    quantizes = True

    def build(self, ref: ModelRef, cfg: Any) -> Built:
        """The materializer's model: config (ref, Hub or type default), shrink, head, inputs."""
        from sweeper.libraries.transformers.build import build

        return build(ref, cfg)
