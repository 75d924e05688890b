"""Zoo coverage: materialise every zoo model type (tiny weights) and run forward + backward.

Each model runs in a long-lived worker subprocess (2 by default, niced); a model that
runs past ``--timeout`` gets its worker killed and replaced. Prints counts per stage, the
top failure reasons, how many vision-language types ran with images, and a last line
``zoo_coverage types=<n> built=<n> forward=<n> backward=<n>`` (plus ``compiled=<n>``
with ``--compile``).

    python benchmarks/zoo_coverage.py --top 50
    python benchmarks/zoo_coverage.py --types bert,llama --out /tmp/zoo.jsonl
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import select
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def run_one(ref_data: dict[str, Any], compile_backend: str | None) -> dict[str, Any]:
    """In a worker: materialise, forward, backward (and compile); return what happened."""
    import torch

    from sweeper.libraries.transformers import materialize
    from sweeper.records import ModelRef
    from sweeper.settings.config import SweepConfig

    ref = ModelRef.from_dict(ref_data)
    result: dict[str, Any] = {"model_type": ref.model_type, "architecture": ref.architecture, "stage": "none"}
    stage = "build"
    try:
        built = materialize(ref, SweepConfig())
        result.update(stage="built", num_parameters=built.num_parameters, has_labels=built.has_labels)
        if "images" in built.notes:
            result["images"] = built.notes["images"]
        stage = "forward"
        loss = _loss(built.model(**built.inputs), built.has_labels)
        result["stage"] = "forward"
        stage = "backward"
        loss.backward()
        if not any(p.grad is not None for p in built.model.parameters()):
            raise RuntimeError("backward ran but no parameter received a gradient")
        result["stage"] = "backward"
        if compile_backend:
            stage = "compile"
            compiled = torch.compile(built.model, backend=compile_backend)
            _loss(compiled(**built.inputs), built.has_labels).backward()
            result["stage"] = "compile"
    except BaseException as exc:  # noqa: BLE001 - every failure becomes a reason
        result.update(failed=stage, reason=_reason(exc))
    return result


def _loss(out: Any, has_labels: bool) -> Any:

    if has_labels and getattr(out, "loss", None) is not None:
        return out.loss
    floats = [v for v in _tensors(out) if v.is_floating_point() and v.requires_grad]
    if not floats:
        raise RuntimeError("the output has no float tensor that needs a gradient")
    return sum(v.float().mean() for v in floats)


def _tensors(value: Any) -> list[Any]:
    """Every tensor in a (nested) model output: ModelOutput, tuples, lists, dicts."""
    import torch

    if torch.is_tensor(value):
        return [value]
    if hasattr(value, "values") and callable(value.values):
        return [t for v in value.values() for t in _tensors(v)]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensors(v)]
    return []


def _reason(exc: BaseException) -> str:
    kind = getattr(exc, "reason_kind", None)
    label = kind.value if kind is not None else type(exc).__name__
    message = " ".join(str(exc).split())[:160]
    return f"{label}: {message}"


def worker_main(compile_backend: str | None) -> None:
    """Worker loop: one JSON ref per stdin line, one JSON result per stdout line."""
    import warnings

    warnings.filterwarnings("ignore")
    out = sys.stdout
    sys.stdout = sys.stderr  # models that print must not corrupt the protocol
    for line in sys.stdin:
        result = run_one(json.loads(line), compile_backend)
        out.write(json.dumps(result) + "\n")
        out.flush()


class Worker:
    """A worker subprocess; replaced after a timeout or ``max_models`` models."""

    def __init__(self, compile_backend: str | None, max_models: int) -> None:
        self.compile_backend, self.max_models, self.proc, self.done = compile_backend, max_models, None, 0

    def _start(self) -> subprocess.Popen:
        cmd = [sys.executable, __file__, "--worker"] + (["--compile", self.compile_backend] if self.compile_backend else [])
        env = dict(os.environ, PYTHONPATH=str(REPO), TOKENIZERS_PARALLELISM="false", OMP_NUM_THREADS="1")
        return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                text=True, env=env)

    def run(self, ref_data: dict[str, Any], timeout: float) -> dict[str, Any]:
        if self.proc is None or self.proc.poll() is not None or self.done >= self.max_models:
            self.stop()
            self.proc, self.done = self._start(), 0
        self.done += 1
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps(ref_data) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else ""
        if line:
            return json.loads(line)
        crashed = bool(ready)
        self.stop()
        reason = "crash: worker died" if crashed else f"timeout: over {timeout:.0f} s"
        return {"model_type": ref_data.get("model_type"), "stage": "none", "failed": "build", "reason": reason}

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


def sweep(refs: list[dict[str, Any]], *, workers: int, timeout: float, compile_backend: str | None,
          out_path: Path | None) -> list[dict[str, Any]]:
    """Run every ref through the worker pool; results in completion order."""
    pending = list(reversed(refs))
    results: list[dict[str, Any]] = []
    lock = threading.Lock()
    sink = out_path.open("w") if out_path else None

    def loop() -> None:
        worker = Worker(compile_backend, max_models=40)
        while True:
            with lock:
                if not pending:
                    break
                ref = pending.pop()
            t0 = time.time()
            res = worker.run(ref, timeout)
            res["seconds"] = round(time.time() - t0, 2)
            with lock:
                results.append(res)
                print(f"[{len(results)}/{len(refs)}] {res['model_type']}: {res['stage']}"
                      f"{'  ' + res['reason'] if res.get('reason') else ''}"[:220], flush=True)
                if sink:
                    sink.write(json.dumps(res) + "\n")
                    sink.flush()
        worker.stop()

    threads = [threading.Thread(target=loop) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def summarise(results: list[dict[str, Any]], compile_backend: str | None) -> None:
    """Counts per stage, the top failure reasons, and the one-line summary."""
    order = ["none", "built", "forward", "backward", "compile"]
    reached = collections.Counter(order.index(r["stage"]) for r in results)
    at_least = {name: sum(n for i, n in reached.items() if i >= order.index(name)) for name in order}
    reasons = collections.Counter(re.sub(r"\d+", "N", r["reason"])[:110] for r in results if r.get("reason"))
    print("\ntop failure reasons:")
    for reason, count in reasons.most_common(10):
        print(f"  {count:4d}  {reason}")
    vlm = [r["images"] for r in results if "images" in r]
    with_images = sum(not note.startswith("text-only") for note in vlm)
    print(f"\nvision-language types: {len(vlm)}, run with images: {with_images}, text-only: {len(vlm) - with_images}")
    line = (f"zoo_coverage types={len(results)} built={at_least['built']} forward={at_least['forward']} "
            f"backward={at_least['backward']}")
    print(line + (f" compiled={at_least['compile']}" if compile_backend else ""))


def main() -> None:
    """Parse flags, list the zoo, sweep it, print the summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=None)
    parser.add_argument("--types", default="", help="comma-separated model types (default: the zoo)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--compile", default=None, help="also compile fwd+bwd with this backend (aot_eager)")
    parser.add_argument("--out", type=Path, default=None, help="write one JSON result per line here")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker_main(args.compile)
        return
    os.nice(10)  # the machine is shared: stay behind interactive work
    sys.path.insert(0, str(REPO))
    from sweeper.sources.zoo import zoo_ref, zoo_types

    types = [t for t in args.types.split(",") if t] or list(zoo_types())
    types = types[: args.top] if args.top else types
    refs = [zoo_ref(t, rank).to_dict() for rank, t in enumerate(types, start=1)]
    t0 = time.time()
    results = sweep(refs, workers=args.workers, timeout=args.timeout, compile_backend=args.compile, out_path=args.out)
    print(f"\n{len(results)} model types in {time.time() - t0:.0f} s on {args.workers} workers")
    summarise(results, args.compile)


if __name__ == "__main__":
    main()
