"""The generate stage: a model that generates, run as its users run it.

Greedy and seeded, a few new tokens, two ways:

- *eager*: ``model.generate`` on the device with the model's default cache;
- *compiled*: the transformers documentation's recipe, a static cache
  (``generation_config.cache_implementation = "static"``) and the model's forward compiled
  with the device's backend (``model.forward = torch.compile(model.forward, ...)``, one
  graph where the model class says it compiles whole). The compiles are counted per
  decoding step: a prefill graph and one decode graph is the recipe working; a decode that
  compiles again at later steps recompiles per token, a finding of its own.

Each run's tokens are judged against the CPU's eager tokens, made at load while the model
is still on the CPU (``tokens.judge``: equal, a tie, or a numerics gap). Models whose cache
the static recipe cannot take (they build their own in ``prepare_inputs_for_generation``)
run the compiled forward with their own cache, and the record says so.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import time
from dataclasses import dataclass, field
from typing import Any

import torch

from sweeper.checks.numerics import seeded, tolerance_for
from sweeper.checks.shape_inputs import moved
from sweeper.checks.tokens import TokenVerdict, judge
from sweeper.records import Reason, ReasonKind
from sweeper.settings.errors import NumericsError, SweeperError

NEW_TOKENS = 8
# Inputs that belong to a training step, not to a prompt.
NOT_PROMPT = frozenset({"labels", "decoder_input_ids", "decoder_attention_mask", "decoder_inputs_embeds",
                        "use_cache", "cache", "return_dict", "output_attentions", "output_hidden_states", "past_key_values"})
MODES = ("eager", "compiled")


@dataclass
class GenerationPlan:
    """What the generate stage needs, made on the CPU: the prompt and the CPU's answer."""

    kind: str  # decoder-only | encoder-decoder
    prompt: dict[str, Any]  # CPU tensors for generate(**prompt)
    options: dict[str, Any]  # generate's keyword options (greedy, token ids)
    tokens: torch.Tensor  # the CPU's new tokens (batch x steps)
    logits: list[torch.Tensor] = field(default_factory=list)  # the CPU's raw logits per step
    seconds: float = 0.0


def generator_of(model: Any) -> Any | None:
    """The transformers model that generates inside ``model`` (itself, or the model a
    loss wrapper holds), or None: a model that does not generate has no generate stage."""
    for candidate in (model, getattr(model, "model", None)):
        can = getattr(candidate, "can_generate", None)
        if callable(can) and hasattr(candidate, "generate"):
            with contextlib.suppress(Exception):
                if can():
                    return candidate
    return None


def plan_on_cpu(model: Any, inputs: dict[str, Any], *, seed: int) -> GenerationPlan | None:
    """The CPU's greedy tokens for the built inputs' prompt (None: the model does not
    generate). Raises what ``generate`` raises on the CPU."""
    generator = generator_of(model)
    if generator is None:
        return None
    prompt = {k: v for k, v in inputs.items() if k not in NOT_PROMPT}
    config = generator.config
    kind = "encoder-decoder" if getattr(config, "is_encoder_decoder", False) else "decoder-only"
    options = _options(generator)
    started = time.perf_counter()
    with seeded(seed), torch.no_grad(), _generation_config(generator, cache=None, options=options):
        out = generator.generate(**prompt)
    tokens = _new_tokens(out, prompt, kind)
    return GenerationPlan(kind=kind, prompt=prompt, options=options, tokens=tokens,
                          logits=[t.detach().clone() for t in _logits(out)],
                          seconds=time.perf_counter() - started)


def _options(generator: Any) -> dict[str, Any]:
    """Greedy decoding of exactly ``NEW_TOKENS`` tokens, logits returned for judging; the
    token ids a tiny config may lack filled in (pad, decoder start)."""
    config = generator.config.get_text_config(decoder=True) if hasattr(generator.config, "get_text_config") else generator.config
    gen = generator.generation_config
    pad = gen.pad_token_id if gen.pad_token_id is not None else getattr(config, "pad_token_id", None)
    eos = gen.eos_token_id if gen.eos_token_id is not None else getattr(config, "eos_token_id", None)
    options: dict[str, Any] = {
        "max_new_tokens": NEW_TOKENS, "min_new_tokens": NEW_TOKENS, "do_sample": False, "num_beams": 1,
        "return_dict_in_generate": True, "output_logits": True,
        "pad_token_id": pad if pad is not None else (eos if isinstance(eos, int) else 0),
    }
    if getattr(generator.config, "is_encoder_decoder", False) and gen.decoder_start_token_id is None:
        start = getattr(generator.config, "decoder_start_token_id", None)
        options["decoder_start_token_id"] = start if start is not None else options["pad_token_id"]
    return options


@contextlib.contextmanager
def _generation_config(generator: Any, *, cache: str | None, options: dict[str, Any]) -> Any:
    """The model's generation config with ``options`` and ``cache_implementation`` set as
    asked and transformers' own automatic compilation off (the stage compiles as the recipe
    says, so it counts every compile itself); restored afterwards. The options go in the
    config, not as keywords: a model's own ``generate`` (BLIP's) passes some of them itself."""
    kept = generator.generation_config
    changed = copy.deepcopy(kept)
    for name, value in options.items():
        setattr(changed, name, value)
    changed.cache_implementation = cache
    changed.use_cache = True
    with contextlib.suppress(AttributeError):
        changed.disable_compile = True
    generator.generation_config = changed
    try:
        yield changed
    finally:
        generator.generation_config = kept


def _new_tokens(out: Any, prompt: dict[str, Any], kind: str) -> torch.Tensor:
    """The tokens generate added: after the prompt for a decoder-only model, after the
    decoder's start token for an encoder-decoder (whose output starts the decoder)."""
    sequences = out if isinstance(out, torch.Tensor) else out.sequences
    new = len(_logits(out)) or NEW_TOKENS
    if kind == "decoder-only" and "input_ids" in prompt:
        return sequences[:, prompt["input_ids"].shape[-1]:]
    return sequences[:, -new:]


def run(ctx: Any, plan: GenerationPlan) -> dict[str, Any]:
    """Both modes on ``ctx``'s device; the finding the record keeps. Raises the first
    failure (the eager run's first: a compiled run of a model that cannot generate eagerly
    would only fail again), or a ``NumericsError`` when a mode's tokens are not the CPU's."""
    generator = generator_of(ctx.built.model)
    assert generator is not None
    tol = tolerance_for(ctx.cfg.device.dtype, atol=ctx.cfg.check.atol)
    found: dict[str, Any] = {"kind": plan.kind, "class": type(generator).__name__, "new_tokens": NEW_TOKENS,
                             "batch": int(plan.tokens.shape[0]), "modes": [], "cpu_seconds": round(plan.seconds, 3)}
    ctx.findings["generation"] = found
    prompt = {k: moved(v, ctx.device.torch_device) for k, v in plan.prompt.items()}
    verdicts: dict[str, TokenVerdict] = {}
    for mode in MODES:
        started = time.perf_counter()
        entry: dict[str, Any] = {}
        found[mode] = entry
        found["modes"].append(mode)
        try:
            # Its own recording: under --collect-all a mode runs on past the device's refusals,
            # and the mode that met them must not read as passing.
            with ctx.device.recording() as seen:
                out = (_eager if mode == "eager" else _compiled)(ctx, generator, prompt, plan, entry)
            if seen.blockers:
                entry["blockers"] = sorted({" ".join(x for x in (b.kind.value, b.op or "") if x)
                                            for b in seen.blockers})[:5]
        except Exception:
            # The tokens judged before this mode failed keep their verdict beside its failure.
            ctx.found_blockers.extend(_numerics_reason(m, v, tol) for m, v in verdicts.items() if not v.passed)
            raise
        finally:
            entry["seconds"] = round(time.perf_counter() - started, 3)
        if mode == "compiled" and not entry.get("compiles_per_step"):
            # The forward was never called: compiling it compiled nothing, so no verdict.
            found["modes"].remove(mode)
            found["compiled_not_run"] = (f"{found['class']}.generate does not call its own forward (it decodes "
                                         "through a sub-model), so the compiled forward never ran")
            del found[mode]
            continue
        verdicts[mode] = _unless_unjudgeable(ctx, judge(_new_tokens(out, plan.prompt, plan.kind), plan.tokens,
                                                         plan.logits, _logits(out), tol))
        entry.update(verdicts[mode].to_dict())
        cache = _cache_of(out)
        if cache is not None:
            entry["cache"] = type(cache).__name__
    found["tokens_equal"] = all(v.tokens_equal for v in verdicts.values())
    found["ties"] = [m for m, v in verdicts.items() if v.verdict == "tie"]
    wrong = [(m, v) for m, v in verdicts.items() if not v.passed]
    steps = (found.get("compiled") or {}).get("compiles_per_step") or []
    if (found.get("compiled") or {}).get("recompiles_every_step"):
        # Every token a compile: past Dynamo's recompile limit the recipe's one graph fails.
        ctx.found_blockers.extend(_numerics_reason(m, v, tol) for m, v in wrong)
        raise RecompilesPerTokenError(_recompile_message(steps, failed=None))
    if wrong:
        ctx.found_blockers.extend(_numerics_reason(m, v, tol) for m, v in wrong[1:])
        raise NumericsError(_numerics_message(*wrong[0], tol))
    return found


def _unless_unjudgeable(ctx: Any, verdict: TokenVerdict) -> TokenVerdict:
    """``verdict``, unless it is a numerics gap of a model whose forward the earlier stages
    found moving from run to run (the CPU's own rerun with another seed, or the device's
    own two runs, past the tolerance): then its tokens cannot judge the device."""
    if verdict.passed:
        return verdict
    numerics = ctx.findings.get("numerics") or {}
    if "nondeterministic" in numerics:
        why = "the forward's CPU rerun with another seed differs past the tolerance: the model's output moves with the seed"
    elif "forward" in (numerics.get("device_nondeterministic") or {}):
        why = "the device's own two forward runs differ past the CPU's: the device cannot be judged"
    else:
        return verdict
    return dataclasses.replace(verdict, verdict="not_judged", why=why)


class RecompilesPerTokenError(SweeperError):
    """Compiled decoding compiled anew at every step until it could not any more: the
    graphs did not serve the next token's shapes or values."""

    reason_kind = ReasonKind.DYNAMIC_SHAPE


def _eager(ctx: Any, generator: Any, prompt: dict[str, Any], plan: GenerationPlan, entry: dict[str, Any]) -> Any:
    """``generate`` on the device with the model's default cache."""
    with seeded(ctx.cfg.materialise.seed), torch.no_grad(), _generation_config(generator, cache=None,
                                                                                  options=plan.options):
        out = generator.generate(**prompt)
    ctx.device.synchronize()
    return out


def _compiled(ctx: Any, generator: Any, prompt: dict[str, Any], plan: GenerationPlan, entry: dict[str, Any]) -> Any:
    """The documented recipe: a static cache and the forward compiled with the device's
    backend, the compiles counted per call of the forward (one call per decoding step)."""
    backend = ctx.cfg.device.compile_backend or ctx.device.compile_backend
    static = bool(generator._supports_default_dynamic_cache())
    whole = bool(getattr(generator, "_can_compile_fullgraph", False))
    entry.update(backend=backend, fullgraph=whole, cache_implementation="static" if static else None)
    if not static:
        entry["why_not_static"] = (f"{type(generator).__name__} builds its own cache in prepare_inputs_for_generation "
                                   "(transformers' _supports_default_dynamic_cache): compiled with that cache")
    steps: list[int] = []
    original = generator.forward
    compiled = torch.compile(original, backend=backend, fullgraph=whole)

    # generate reads the forward's signature to check its keyword arguments: keep it.
    @functools.wraps(original)
    def counted(*args: Any, **kwargs: Any) -> Any:
        before = _graphs()
        try:
            return compiled(*args, **kwargs)
        finally:
            steps.append(_graphs() - before)

    generator.forward = counted
    try:
        with seeded(ctx.cfg.materialise.seed), torch.no_grad(), \
                _generation_config(generator, cache="static" if static else None, options=plan.options):
            out = generator.generate(**prompt)
        ctx.device.synchronize()
    except Exception as exc:
        if _recompiled_every_step(steps):
            raise RecompilesPerTokenError(_recompile_message(steps, failed=exc)) from exc
        raise
    finally:
        del generator.forward  # the class's forward again, for the stages after this one
        entry.update(_compile_counts(steps))
    return out


def _logits(out: Any) -> list[torch.Tensor]:
    """The raw logits per step of a generate output (none where a model's own ``generate``
    returns the tokens alone, as BLIP's does)."""
    return [] if isinstance(out, torch.Tensor) else list(getattr(out, "logits", None) or ())


def _cache_of(out: Any) -> Any:
    """The cache generate decoded with (``cache``; ``past_key_values`` before transformers
    named it so)."""
    if isinstance(out, torch.Tensor):
        return None
    found = out.get("cache") if hasattr(out, "get") else None
    return found if found is not None else getattr(out, "past_key_values", None)


def _graphs() -> int:
    """Graphs Dynamo has compiled in this process so far."""
    from torch._dynamo.utils import counters

    return int(counters["stats"]["unique_graphs"])


def _recompile_message(steps: list[int], *, failed: BaseException | None) -> str:
    """Why compiled decoding that compiles at every step is a blocker."""
    end = f" until it failed at step {len(steps) - 1} ({type(failed).__name__})" if failed is not None else ""
    return (f"compiled decoding compiled anew at every step (compiles per step {steps}){end}: the graphs of one "
            "token did not serve the next, so every token pays a compile and, with the recipe's one graph, a "
            "generation longer than Dynamo's recompile limit fails; a device that takes static shapes only "
            "recompiles for every new cache position")


def _recompiled_every_step(steps: list[int]) -> bool:
    """Whether every decode step after the first compiled before the failing last one."""
    later = steps[2:-1]
    return len(later) >= 3 and all(n > 0 for n in later)


def _compile_counts(steps: list[int]) -> dict[str, Any]:
    """Compiles per decoding step: the prefill's (step 0), the first decode step's, and
    those of later steps, which are recompiles a static cache should have made needless."""
    later = steps[2:]
    decode_steps = max(len(steps) - 1, 1)
    recompiles = sum(later)
    return {"compiles_per_step": steps, "compiles": sum(steps), "recompiles": recompiles,
            "recompiles_per_token": round(recompiles / decode_steps, 3),
            "recompiles_every_step": (bool(later) and all(n > 0 for n in later)) or _recompiled_every_step(steps)}


def _numerics_reason(mode: str, verdict: TokenVerdict, tol: Any) -> Reason:
    """A mode's numerics verdict as a blocker of the generate stage."""
    return Reason(ReasonKind.NUMERICS, message=f"NumericsError: {_numerics_message(mode, verdict, tol)}",
                  exc_type="NumericsError", stage="generate")


def _numerics_message(mode: str, verdict: TokenVerdict, tol: Any) -> str:
    """Why a mode's tokens are a numerics verdict, with the step and the CPU's margin."""
    d = verdict.divergence or {}
    if verdict.verdict == "shape":
        return (f"{mode} generate made {d.get('device_shape')} new tokens where the CPU made {d.get('cpu_shape')}")
    if "cpu_top2_gap" not in d:
        return f"{mode} generate's tokens differ from the CPU's at step {d.get('step')} ({d.get('why', '')})"
    return (f"{mode} generate picked token {d['device_token']} at step {d['step']} (row {d['row']}) where the CPU "
            f"picked {d['cpu_token']}, which the CPU's logits favour by {d['device_token_gap']:.3g} > "
            f"max({tol.atol:g}, {tol.rtol:g} x max|logit|) = {d['bound']:.3g}: not a tie")

