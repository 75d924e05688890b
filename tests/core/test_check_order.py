"""Checks start longest first: a pipeline, then media models, then text models, then what
runs nothing; rank order within each class, and every model still gets its record."""

from __future__ import annotations

from pathlib import Path

from sweeper.executors.order import longest_first
from sweeper.records import ModelRef

ROWS = [
    # rank, id, pipeline_tag, library_name, model_type
    (1, "org/bert", "fill-mask", "transformers", "bert"),
    (2, "org/sentence", "sentence-similarity", "sentence-transformers", "bert"),
    (3, "org/gguf", "text-generation", "gguf", ""),
    (4, "org/vit", "image-classification", "transformers", "vit"),
    (5, "org/sd", "text-to-image", "diffusers", ""),
    (6, "org/whisper", "automatic-speech-recognition", "transformers", "whisper"),
    (7, "org/resnet", "image-classification", "timm", ""),
    (8, "org/llama", "text-generation", "transformers", "llama"),
    (9, "org/kosmos", "image-to-text", "transformers", "kosmos-2"),
]
LONGEST_FIRST = ["org/sd", "org/vit", "org/whisper", "org/resnet", "org/kosmos", "org/bert", "org/sentence", "org/llama",
                 "org/gguf"]


def _ref(rank: int, model_id: str, tag: str, library: str, model_type: str) -> ModelRef:
    return ModelRef(model_id=model_id, rank=rank, pipeline_tag=tag, library_name=library, model_type=model_type or None)


def test_longest_expected_checks_come_first_in_rank_order_within_a_class() -> None:
    refs = [_ref(*row) for row in ROWS]
    assert [ref.model_id for ref in longest_first(refs)] == LONGEST_FIRST


def test_a_sweep_starts_its_checks_longest_first_and_records_every_model(tmp_path: Path) -> None:
    from sweeper.records import Status, base_record
    from sweeper.runner import run_sweep
    from sweeper.settings.config import SweepConfig
    from sweeper.storage.store import read_records

    catalog = tmp_path / "catalog.csv"
    catalog.write_text("rank,id,downloads,pipeline_tag,library_name,model_type\n" + "".join(
        f"{rank},{model_id},{1000 - rank},{tag},{library},{model_type}\n" for rank, model_id, tag, library, model_type in ROWS))
    started: list[str] = []

    def passes(ref, cfg):  # noqa: ANN001, ANN202 - the executor's CheckFn
        started.append(ref.model_id)
        return base_record(ref, sweep_id="", device=cfg.device.spec, status=Status.PASS)

    cfg = SweepConfig.of(source="catalog", catalog=str(catalog), executor="inline", out=str(tmp_path / "out"),
                         stages=("load",))
    run_sweep(cfg, check=passes, quiet=True, write_report=False)
    assert started == LONGEST_FIRST
    records = read_records(tmp_path / "out")
    assert sorted(r.model_id for r in records) == sorted(row[1] for row in ROWS)
