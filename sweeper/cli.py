"""The ``sweep`` command: the bare form runs a sweep; subcommands sit beside it.

    sweep --top 100 --device trnsim           run (or resume) a sweep
    sweep one MODEL --device trnsim           one model, verbose
    sweep report OUT | diff OLD NEW | diff --expected CSV RUN | expect RUN --write CSV | history RUN...
    sweep publish OUT --to DIR [--compare OTHER] | serve DIR
    sweep devices | catalog

Bad input prints one line on stderr and exits 2; nothing is written.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

try:  # typer >= 0.20 vendors click; older releases use the click package
    from typer._click import exceptions as click_exceptions
except ImportError:  # pragma: no cover
    from click import exceptions as click_exceptions

from sweeper.settings.errors import UsageError

# Typer's own exit and abort signals (older releases raise click's).
_EXIT = getattr(click_exceptions, "Exit", typer.Exit)
_ABORT = getattr(click_exceptions, "Abort", typer.Abort)

app = typer.Typer(
    add_completion=False,
    no_args_is_help=False,
    invoke_without_command=True,
    help="Sweep Hugging Face models on a PyTorch device and report what runs and what blocks the rest.",
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
)

Top = Annotated[int | None, typer.Option("--top", help="Take the first N models in rank order.")]
Device = Annotated[str | None, typer.Option("--device", "-d", help="Torch device string: cpu (default), cuda, trnsim, ... (see `sweep devices`).")]
Weights = Annotated[str | None, typer.Option("--weights", help="tiny (offline default) | random | pretrained.")]
Stages = Annotated[list[str] | None, typer.Option("--stages", help="Stages to run (comma-separated): load,to_device,forward,backward,compile,generate,shapes.")]
CompileBackend = Annotated[str | None, typer.Option("--compile-backend", help="torch.compile backend instead of the device's (aot_eager, inductor, ...).")]
Profile = Annotated[str | None, typer.Option("--device-profile", help="Capability profile for the device (trnsim): a shipped name (trnsim, trnsim-tf32, trnsim-next) or a TOML path.")]
Dtype = Annotated[str | None, typer.Option("--dtype", help="float32 | bfloat16 | float16.")]
CollectAll = Annotated[bool, typer.Option("--collect-all", help="Keep going after a blocker to find every blocker of a model.")]
Retie = Annotated[bool, typer.Option("--retie-weights", help="Keep tied weights tied across .to(device).")]
WholeGraph = Annotated[bool, typer.Option("--whole-graph", help="Compile with fullgraph=True and data-dependent ops captured into the graph (default: Dynamo's defaults, a graph break runs the op eagerly).")]
StrictFloat32 = Annotated[bool, typer.Option("--strict-float32", help="Exact float32 matmuls and convolutions (TF32 off, matmul precision 'highest'): what the device's default math hides.")]
Catalog = Annotated[str | None, typer.Option("--catalog", help="A catalog file (CSV, JSONL, Parquet) to take models from.")]


def _opts(**values: Any) -> dict[str, Any]:
    """CLI values that were given (None and unset flags fall through to config files)."""
    return {k: v for k, v in values.items() if v is not None and v is not False and v != []}


@app.callback()
def sweep(
    ctx: typer.Context,
    top: Top = None,
    device: Device = None,
    source: Annotated[str | None, typer.Option("--source", help="auto (Hub, else snapshot, else zoo) | zoo | catalog | hub.")] = None,
    catalog: Catalog = None,
    weights: Weights = None,
    stages: Stages = None,
    executor: Annotated[str | None, typer.Option("--executor", help="ray | process | inline.")] = None,
    out: Annotated[str | None, typer.Option("--out", "-o", help="Output folder (rerun the same command on it to resume).")] = None,
    timeout: Annotated[float | None, typer.Option("--timeout", help="Seconds per model before it is stopped.")] = None,
    shapes_timeout: Annotated[float | None, typer.Option("--shapes-timeout", help="Seconds the shapes stage may take; past them it is a timeout of that stage alone.")] = None,
    compile_backend: CompileBackend = None,
    device_profile: Profile = None,
    dtype: Dtype = None,
    collect_all: CollectAll = False,
    retie_weights: Retie = False,
    whole_graph: WholeGraph = False,
    strict_float32: StrictFloat32 = False,
    trust_remote_code: Annotated[bool, typer.Option("--trust-remote-code", help="Allow models' own Python code (off by default).")] = False,
    task: Annotated[list[str] | None, typer.Option("--task", help="Only these pipeline tags.")] = None,
    library: Annotated[list[str] | None, typer.Option("--library", help="Only these libraries.")] = None,
    model_type: Annotated[list[str] | None, typer.Option("--model-type", help="Only these model types.")] = None,
    include: Annotated[list[str] | None, typer.Option("--include", help="Only model ids matching these globs.")] = None,
    exclude: Annotated[list[str] | None, typer.Option("--exclude", help="Skip model ids matching these globs.")] = None,
    workers: Annotated[int | None, typer.Option("--workers", help="Parallel worker processes (default: CPUs / --num-cpus).")] = None,
    address: Annotated[str | None, typer.Option("--address", help="Ray cluster: auto or ray://HOST:PORT.")] = None,
    num_cpus: Annotated[float | None, typer.Option("--num-cpus", help="CPUs per model.")] = None,
    num_gpus: Annotated[float | None, typer.Option("--num-gpus", help="GPUs per model.")] = None,
    retries: Annotated[int | None, typer.Option("--retries", help="Retries after infrastructure faults (never model faults).")] = None,
    worker_max_models: Annotated[int | None, typer.Option("--worker-max-models", help="Recycle a worker after this many models.")] = None,
    max_in_flight: Annotated[int | None, typer.Option("--max-in-flight", help="Ray: models submitted ahead of the finished ones.")] = None,
    memory_limit_mb: Annotated[int | None, typer.Option("--memory-limit-mb", help="A model whose worker grows past this is an oom record.")] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Seed for random weights and inputs.")] = None,
    hub_rpm: Annotated[float | None, typer.Option("--hub-rpm", help="Hub requests per minute for this node, all workers together.")] = None,
    hub_tries: Annotated[int | None, typer.Option("--hub-tries", help="Tries per Hub request on 429/5xx/connection resets.")] = None,
    max_params: Annotated[int | None, typer.Option("--max-params", help="Pretrained: skip models with more parameters (default: what memory holds).")] = None,
    max_download_gb: Annotated[float | None, typer.Option("--max-download-gb", help="Pretrained: skip larger weight downloads (default: free disk).")] = None,
    no_reuse: Annotated[bool, typer.Option("--no-reuse", help="Run every model's check, even when another model's is the same.")] = False,
    cache: Annotated[str | None, typer.Option("--cache", help="A folder of results across sweeps, keyed by check fingerprint.")] = None,
    recheck: Annotated[float | None, typer.Option("--recheck", help="With --cache: run a seeded P% of the checks the cache answers again and record whether each verdict came back (flaky verdicts).")] = None,
    config: Annotated[str | None, typer.Option("--config", help="A TOML file of settings (CLI flags win).")] = None,
    no_report: Annotated[bool, typer.Option("--no-report", help="Do not write report.md after the sweep.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress output.")] = False,
) -> None:
    """Run (or resume) a sweep: `sweep --top N --device D`."""
    if ctx.invoked_subcommand is not None:
        return
    from sweeper.settings.config import build_config

    cfg = build_config(
        _opts(top=top, device=device, source=source, catalog=catalog, weights=weights, stages=stages,
              executor=executor, out=out, timeout=timeout, shapes_timeout=shapes_timeout, compile_backend=compile_backend,
              device_profile=device_profile, dtype=dtype, collect_all=collect_all, retie_weights=retie_weights,
              whole_graph=whole_graph, strict_float32=strict_float32, trust_remote_code=trust_remote_code, tasks=task, libraries=library, model_types=model_type,
              include=include, exclude=exclude, workers=workers, address=address, num_cpus=num_cpus,
              num_gpus=num_gpus, retries=retries, worker_max_models=worker_max_models, seed=seed,
              max_in_flight=max_in_flight, memory_limit_mb=memory_limit_mb, hub_rpm=hub_rpm, hub_tries=hub_tries,
              max_params=max_params, max_download_gb=max_download_gb, cache=cache, recheck=recheck),
        config_file=config,
    )
    if catalog and not source:
        cfg = cfg.replace(source="catalog")
    if no_reuse:
        cfg = cfg.replace(reuse=False)
    from sweeper.runner import run_sweep
    from sweeper.storage.folder import SweepFolder

    result = run_sweep(cfg, quiet=quiet, write_report=not no_report)
    where = f"; report: {result.report}" if result.report else ""
    print(f"records: {SweepFolder(result.out_dir).records} ({result.total} models){where}")


@app.command()
def one(
    model: Annotated[str, typer.Argument(help="A model id (Hub id, zoo id, or model type such as `bert`).")],
    device: Device = None,
    weights: Weights = None,
    stages: Stages = None,
    architecture: Annotated[str | None, typer.Option("--architecture", help="Head class to build, e.g. BertForMaskedLM.")] = None,
    catalog: Catalog = None,
    library: Annotated[str | None, typer.Option("--library", help="The model's library as the Hub names it (transformers, timm, ...); with --model-type/--task, describes a model no local source lists.")] = None,
    model_type: Annotated[str | None, typer.Option("--model-type", help="The model's config type (bert, vit, ...).")] = None,
    task: Annotated[str | None, typer.Option("--task", help="The model's pipeline tag (fill-mask, image-classification, ...).")] = None,
    revision: Annotated[str | None, typer.Option("--revision", help="The Hub revision to take.")] = None,
    compile_backend: CompileBackend = None,
    device_profile: Profile = None,
    dtype: Dtype = None,
    collect_all: CollectAll = False,
    retie_weights: Retie = False,
    whole_graph: WholeGraph = False,
    strict_float32: StrictFloat32 = False,
    trust_remote_code: Annotated[bool, typer.Option("--trust-remote-code", help="Allow the model's own Python code.")] = False,
    seed: Annotated[int | None, typer.Option("--seed", help="Seed for random weights and inputs.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the record as JSON.")] = False,
) -> None:
    """Check one model in this process and print everything about it."""
    from sweeper.checks.checker import Checker
    from sweeper.settings.config import build_config
    from sweeper.sources.resolve import resolve_model

    cfg = build_config(_opts(device=device, weights=weights, stages=stages, compile_backend=compile_backend,
                             device_profile=device_profile, dtype=dtype, collect_all=collect_all,
                             retie_weights=retie_weights, whole_graph=whole_graph, strict_float32=strict_float32,
                             catalog=catalog, executor="inline",
                             trust_remote_code=trust_remote_code, seed=seed))
    # The device as a sweep's workers build it: its profile, --collect-all, the spec's checks.
    checker = Checker.for_settings(cfg)
    if library or model_type or task or revision:  # a catalog entry, as a record's repro describes it
        from sweeper.sources.resolve import described_model

        ref = described_model(model, library=library, model_type=model_type, task=task, revision=revision,
                              architecture=architecture)
    else:
        ref = resolve_model(model, cfg, architecture=architecture)
    from sweeper.hub.access import settle_hub_access

    hub = settle_hub_access([ref], timeout=cfg.source.hub_timeout, weights=cfg.materialise.weights)
    if hub:
        print(f"note: {hub}", file=sys.stderr)
    record = checker.check(ref)
    if as_json:
        print(json.dumps(record.to_dict(), indent=2, default=str))
    else:
        from sweeper.report.one_model import describe_record

        print(describe_record(record))
    raise typer.Exit(0 if record.status.value in ("pass", "skip") else 1)


@app.command()
def devices() -> None:
    """List the device strings sweeper knows, whether each is usable here, and what it needs."""
    from sweeper.devices.base import get_device, known_devices

    rows = []
    for name, factory in known_devices().items():
        try:
            dev = get_device(name)
            ok, why = dev.available()
            desc, needs = dev.description, dev.needs
        except Exception as exc:  # a plugin that cannot even be built is shown, not fatal
            doc = "" if isinstance(factory, str) else getattr(factory, "__doc__", "") or ""  # a "module:attr" not importable
            ok, why, desc, needs = False, f"{type(exc).__name__}: {exc}", doc, ""
        rows.append((name, "yes" if ok else "no", desc or "", needs or "", why))
    print(f"{'device':<8} {'usable':<6} description")
    for name, ok, desc, needs, why in rows:
        print(f"{name:<8} {ok:<6} {desc}" + (f" — needs {needs}" if needs and needs != "nothing" else "") + (f" ({why})" if why else ""))


@app.command()
def catalog(
    source: Annotated[str, typer.Option("--source", help="auto | zoo | catalog | hub.")] = "auto",
    path: Catalog = None,
    top: Top = 20,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
) -> None:
    """List the models a source yields, in rank order."""
    from sweeper.settings.config import build_config
    from sweeper.sources.base import get_source, select

    cfg = build_config(_opts(source="catalog" if path and source == "auto" else source, catalog=path, top=top))
    src = get_source(cfg)
    print(f"# source: {json.dumps(src.describe(), default=str)}", file=sys.stderr)
    for ref in select(src.refs(), cfg):
        if as_json:
            print(json.dumps({k: v for k, v in ref.to_dict().items() if k != "config"}, default=str))
        else:
            dl = f"{ref.downloads:>12,}" if ref.downloads is not None else " " * 12
            print(f"{ref.rank:>6} {dl} {ref.model_id:<50} {ref.pipeline_tag or '':<22} {ref.architecture or ref.model_type or ''}")


@app.command()
def report(
    out: Annotated[Path, typer.Argument(help="A sweep's output folder.")],
    refresh_repros: Annotated[bool, typer.Option("--refresh-repros", help="First rewrite each record's repro command as this version writes it (a folder swept by an earlier version named the catalog by a path of its machine).")] = False,
    against: Annotated[Path | None, typer.Option("--against", help="Another dtype's sweep of the same catalog: the report gains a section comparing the two.")] = None,
) -> None:
    """(Re)write OUT/report.md, details/, summary.json, records.parquet and charts from the records."""
    from sweeper.report.commands import write_report

    if refresh_repros:
        from sweeper.storage.lock import own_folder
        from sweeper.storage.repros import refresh_repros as rewrite

        with own_folder(out):
            print(f"repro commands rewritten: {rewrite(out)}", file=sys.stderr)
    print(write_report(out, against=against))


@app.command("check-repros")
def check_repros(
    out: Annotated[Path, typer.Argument(help="A sweep folder with reproducers (repros/).")],
    timeout: Annotated[float, typer.Option("--timeout", min=1, help="Seconds one reproducer may run.")] = 300,
) -> None:
    """Run every reproducer the report links and say whether each still fails with its bug's
    diagnostic (exit 1 when one does not); `sweep report OUT` then marks them."""
    from sweeper.report.repro_check import check_repros as run
    from sweeper.report.repro_check import render

    text, code = render(run(out, timeout=timeout))
    print(text)
    raise typer.Exit(code)


@app.command()
def diff(
    old: Annotated[Path, typer.Argument(help="The earlier sweep's folder (with --expected: the sweep to judge).")],
    new: Annotated[Path | None, typer.Argument(help="The later sweep's folder.")] = None,
    fail_on_regression: Annotated[bool, typer.Option("--fail-on-regression", help="Exit 1 when anything regressed.")] = False,
    expected: Annotated[Path | None, typer.Option("--expected", help="An expected-results CSV (`sweep expect`): exit 1 on any model worse than it, print the lines to change for the rest.")] = None,
) -> None:
    """Fixed / regressed / new / gone models per stage between two sweeps, or one sweep against its expected results."""
    from sweeper.report.commands import diff_command, expected_command

    if expected is not None:
        if new is not None:
            raise UsageError("with --expected, give one sweep folder: sweep diff --expected FILE RUN")
        text, code = expected_command(old, expected)
    elif new is None:
        raise UsageError("sweep diff needs two sweep folders (OLD NEW), or --expected FILE and one")
    else:
        text, code = diff_command(old, new, fail_on_regression=fail_on_regression)
    print(text)
    raise typer.Exit(code)


@app.command()
def expect(
    run: Annotated[Path, typer.Argument(help="The sweep folder whose results become the expected ones.")],
    write: Annotated[Path | None, typer.Option("--write", help="The CSV to write (its `tracking` column is kept); without it, print the CSV.")] = None,
) -> None:
    """Write a sweep's results as an expected-results CSV to check in (`sweep diff --expected` gates on it)."""
    from sweeper.report.commands import expect_command

    text = expect_command(run, write)
    print(text if write is None else f"expected results: {write} ({text.count(chr(10)) - 1} models)")


@app.command()
def history(
    runs: Annotated[list[Path], typer.Argument(help="Sweep folders, oldest first, or one folder of dated sweep folders.")],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Where to write history.md, history.html and charts (default: the newest sweep's folder).")] = None,
) -> None:
    """Trends across sweeps: coverage and pass rate per night over the same models, the plan's items, changes, blockers, flaky verdicts."""
    from sweeper.report.commands import write_history

    print(write_history(runs, out))


@app.command()
def publish(
    out: Annotated[Path, typer.Argument(help="A sweep's output folder.")],
    to: Annotated[str, typer.Option("--to", help="A folder, or hf://datasets/ORG/NAME.")],
    compare: Annotated[Path | None, typer.Option("--compare", help="Another sweep's folder: the page marks fixed / regressed models.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Publish into a non-empty folder that an earlier publish did not write.")] = False,
) -> None:
    """Publish a sweep: a self-contained folder (with index.html), or a Hugging Face dataset."""
    from sweeper.report.publish import publish as do_publish

    print(do_publish(out, to, compare=compare, force=force))


@app.command()
def serve(
    folder: Annotated[Path, typer.Argument(help="A published folder (or a sweep folder) holding index.html.")],
    port: Annotated[int, typer.Option("--port", help="Port on 127.0.0.1 (0: any free port).")] = 8000,
) -> None:
    """Serve a published folder's index.html on loopback (127.0.0.1 only) for a quick look."""
    from sweeper.report.serve import serve as do_serve

    do_serve(folder, port)


def main(argv: list[str] | None = None) -> None:
    """Entry point: one-line errors and exit 2 for bad input, never a traceback.

    Everything printed passes the redactor; SIGTERM ends a sweep like Ctrl-C does.
    """
    from sweeper.executors.interrupt import terminate_as_interrupt
    from sweeper.redact import RedactingStream

    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = RedactingStream(sys.stdout), RedactingStream(sys.stderr)
    try:
        with terminate_as_interrupt():
            _main(argv)
    finally:
        sys.stdout, sys.stderr = saved


def _main(argv: list[str] | None) -> None:
    try:
        code = app(args=argv, standalone_mode=False)
    except UsageError as exc:
        _die(str(exc))
    except click_exceptions.UsageError as exc:
        _die(exc.format_message().replace("\n", " "))
    except _EXIT as exc:
        code = exc.exit_code
    except (_ABORT, KeyboardInterrupt):  # click turns Ctrl-C into Abort
        _die(INTERRUPTED, code=130)
    except Exception as exc:  # noqa: BLE001 - an OS error or a bug: one line, the traceback on request
        if os.environ.get("SWEEPER_DEBUG"):
            raise
        _die(f"{type(exc).__name__}: {exc} (set SWEEPER_DEBUG=1 for the traceback)", code=1)
    if code == 130:  # typer turns Ctrl-C (and SIGTERM, see sweeper.executors.interrupt) into exit code 130
        _die(INTERRUPTED, code=130)
    sys.exit(code if isinstance(code, int) else 0)


INTERRUPTED = "interrupted; rerun the same command to resume"


def _die(message: str, code: int = 2) -> None:
    print(f"sweep: error: {message}", file=sys.stderr)
    sys.exit(code)


if __name__ == "__main__":
    main()
