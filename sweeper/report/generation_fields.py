"""The generate stage's findings of one record as the report's model columns.

``checks.generation`` writes ``record.generation``; the report keeps of it the kind of
model, each mode's verdict (``equal``, ``tie``, ``not_judged``, ``numerics``, ``shape``, or ``raised`` when
the mode stopped on an exception and so has none), whether the compiled run had a static
cache, its recompiles after the first decode step, and one line that says it all (the
page's). A diffusion pipeline's findings (images, not tokens; no cache) and a kind this
version does not know keep their name and whatever modes they have.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

COLUMNS = ["generation_kind", "generation_class", "generation_eager", "generation_compiled", "generation_static",
           "generation_recompiles", "generation_every_step", "generation_steps", "generation_text"]
MODES = ("eager", "compiled")
# A tie: the device's token within the tolerance of the CPU's best; not judged: the model's
# own output moves from run to run, so its tokens cannot judge the device.
PASSING = ("equal", "tie", "not_judged")
RAISED = "raised"


def generation_columns(generation: dict[str, Any] | None, blockers: Sequence[tuple] = ()) -> tuple:
    """The ``COLUMNS`` values of one record's ``generation`` (Nones for a model that does
    not generate); ``blockers`` are the record's generate-stage blockers (kind, op, ...),
    which name what a raising mode met."""
    if not isinstance(generation, dict) or not generation:
        return (None,) * len(COLUMNS)
    compiled = _mode(generation, "compiled")
    static = None
    if compiled is not None and "cache_implementation" in compiled:  # a pipeline's compiled run has no such cache
        static = "static" if compiled["cache_implementation"] == "static" else "not static"
    recompiles = compiled.get("recompiles") if compiled is not None else None
    steps = compiled.get("compiles_per_step") if compiled is not None else None
    return (
        str(generation.get("kind") or "") or None,
        next((v for v in (generation.get("class"), generation.get("pipeline")) if isinstance(v, str)), None),
        verdict(generation, "eager", blockers),
        verdict(generation, "compiled", blockers),
        static,
        recompiles if isinstance(recompiles, int) else None,
        _every_step(compiled) if compiled is not None else None,
        ", ".join(str(n) for n in steps) if isinstance(steps, list) else None,
        describe(generation, blockers),
    )


def _every_step(compiled: dict[str, Any]) -> bool:
    """Whether compiled decoding compiled at every step after the first decode step, up to
    a last step that failed (a record written before the flag counted that step)."""
    steps = compiled.get("compiles_per_step")
    later = steps[2:-1] if isinstance(steps, list) else []
    return bool(compiled.get("recompiles_every_step")) or (len(later) >= 3 and all(n > 0 for n in later))


def _mode(generation: dict[str, Any], mode: str) -> dict[str, Any] | None:
    entry = generation.get(mode)
    return entry if isinstance(entry, dict) else None


def verdict(generation: dict[str, Any], mode: str, blockers: Sequence[tuple] = ()) -> str | None:
    """One mode's verdict; ``raised`` when the mode ran without reaching one or ran on past
    the device's refusals (``--collect-all``), None when it did not run. A record written
    before each mode kept its own refusals: the stage's refusals (``blockers``, other than
    a numerics verdict) are the compiled mode's, where the static cache is."""
    entry = _mode(generation, mode)
    if entry is None:
        return None
    found = entry.get("verdict")
    if entry.get("blockers"):
        return RAISED
    legacy = "blockers" not in entry and "compiles_per_step" in entry and any(b and b[0] != "numerics" for b in blockers)
    if mode == "compiled" and legacy and "eager" in generation and not _mode(generation, "eager").get("blockers"):
        return RAISED
    return found if isinstance(found, str) and found else RAISED


def describe(generation: dict[str, Any], blockers: Sequence[tuple] = ()) -> str:
    """One line: the kind, then each mode's mark and verdict, the compiled run's cache and
    recompiles (``decoder-only: eager ✓ equal; compiled ✗ unsupported_op aten::index_copy
    (static cache)``)."""
    parts = [_mode_text(generation, mode, blockers) for mode in MODES if _mode(generation, mode) is not None]
    kind = str(generation.get("kind") or "generates")
    return f"{kind}: " + "; ".join(parts) if parts else kind


def _mode_text(generation: dict[str, Any], mode: str, blockers: Sequence[tuple]) -> str:
    entry = _mode(generation, mode) or {}
    found = verdict(generation, mode, blockers)
    at = (entry.get("first_divergence") or {}).get("step")
    words = {"equal": "equal", "tie": f"tie at step {at}", "shape": "wrong number of tokens",
             "numerics": f"wrong token at step {at}" if at is not None else "past the tolerance",
             "not_judged": "not judged (the model's output moves from run to run)"}.get(found or "", "")
    if found == RAISED:
        words = _raised(blockers)
    text = f"{mode} {'✓' if found in PASSING else '✗'} {words}".rstrip()
    if mode == "compiled" and "cache_implementation" in entry:
        extras = ["static cache" if entry["cache_implementation"] == "static" else "its own cache, not static"]
        if isinstance(entry.get("recompiles"), int) and entry["recompiles"] > 0:
            extras.append(f"{entry['recompiles']} recompiles after the first decode step"
                          + (", every step" if _every_step(entry) else ""))
        text += f" ({'; '.join(extras)})"
    return text


def _raised(blockers: Sequence[tuple]) -> str:
    """What a mode that raised met: the stage's first blocker that is no token verdict (a
    numerics blocker is a mode's wrong tokens, not an exception)."""
    named = [b for b in blockers if b and b[0] != "numerics"] or list(blockers)
    if not named:
        return "raised"
    kind, op = named[0][0], named[0][1] if len(named[0]) > 1 else None
    return f"{kind} {op}" if op else str(kind)
