"""``sweep publish``: a self-contained folder, and the records as a ``datasets`` dataset."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from hub_fixtures import hub_server  # noqa: F401  (the loopback Hub fixture)
from report_factory import record, write_sweep
from test_report_markdown import sweep_records

from sweeper.report.publish import publish, records_dataset
from sweeper.settings.errors import UsageError


def test_publish_to_a_folder_is_self_contained(tmp_path: Path) -> None:
    out = write_sweep(tmp_path / "out", sweep_records())
    where = publish(out, str(tmp_path / "site"))
    site = Path(where)
    names = sorted(p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file())
    assert names == [
        ".sweeper-publish",
        "README.md",
        "charts/coverage_vs_rank.png",
        "charts/pass_rate_by_stage.png",
        "charts/top_blockers.png",
        "details/compile-problems.md",  # the pages report.md links to travel with it
        "details/failing-models.md",
        "details/fallbacks-and-breaks.md",
        "details/libraries.md",
        "details/lowering-tool.md",
        "details/model-types.md",
        "details/numerics.md",
        "details/ops.md",
        "details/plan.md",
        "details/shapes.md",
        "details/tasks.md",
        "index.html",
        "records.parquet",
        "report.md",
        "summary.json",
        "sweep.json",
    ]
    card = (site / "README.md").read_text()
    assert card.startswith('---\npretty_name: "Model sweep on trnsim (catalog, 2025-03-21)"\n')
    assert '    path: "records.parquet"' in card
    assert "23.4% of the catalog's downloads run end to end" in card
    report = (site / "report.md").read_text()
    for link in ("charts/pass_rate_by_stage.png", "charts/top_blockers.png"):
        assert f"]({link})" in report and (site / link).is_file()


def test_dataset_card_escapes_what_sweep_json_says(tmp_path: Path) -> None:
    sweep = {"sweep_id": "x`y", "device": {"spec": "<script>x</script>\n# h"}, "source": {"name": "catalog"}}
    out = write_sweep(tmp_path / "out", [record("m", 1, 1)], sweep)
    card = (Path(publish(out, str(tmp_path / "site"))) / "README.md").read_text()
    _, front, body = card.split("---\n", 2)
    assert yaml.safe_load(front)["pretty_name"] == "Model sweep on <script>x</script> # h"  # plain YAML data
    assert "<script>" not in body and "\n# h" not in body
    assert "# Model sweep on &lt;script&gt;x&lt;/script&gt; # h\n" in body
    assert "(sweep ``x`y``)" in body


def test_publish_refuses_its_own_folder_and_bad_hub_targets(tmp_path: Path) -> None:
    out = write_sweep(tmp_path / "out", [record("m", 1, 1)])
    with pytest.raises(UsageError, match="another folder"):
        publish(out, str(out))
    with pytest.raises(UsageError, match="hf://datasets/ORG/NAME"):
        publish(out, "hf://models/org/name")


def test_records_dataset_round_trips_through_save_to_disk(tmp_path: Path) -> None:
    import datasets

    out = write_sweep(tmp_path / "out", sweep_records())
    records_dataset(out).save_to_disk(str(tmp_path / "ds"))
    back = datasets.load_from_disk(str(tmp_path / "ds"))
    assert back.num_rows == 9
    rows = {r["key"]: r for r in back}
    assert [b["op"] for b in rows["org/up-lstm"]["blockers"]] == [
        "aten::upsample_bilinear2d",
        "aten::_thnn_fused_lstm_cell",
    ]
    assert rows["org/pass-b"]["fallback_ops"] == [{"op": "aten::nonzero", "calls": 4}]
    assert rows["org/gated"]["category"] == "environment" and rows["org/gated"]["downloads"] == 10000


def test_publish_to_the_hub_pushes_records_and_report(
    hub_server,  # noqa: F811  (the fixture imported above)
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    import datasets

    monkeypatch.setenv("HF_TOKEN", "hf_reportToken123")
    out = write_sweep(tmp_path / "out", sweep_records())
    where = publish(out, "hf://datasets/platform/trnsim-coverage")
    assert where == f"{hub_server.url}/datasets/platform/trnsim-coverage"
    files = hub_server.repos[("dataset", "platform/trnsim-coverage")].files
    assert {"report.md", "summary.json", "charts/top_blockers.png", "index.html"} <= set(files)
    card = files["README.md"].decode()
    # Every file the card links to went up with it.
    for target in re.findall(r"\]\(([^)]+)\)", card):
        assert target in files, target
    assert '    path: "data/train-*"' in card and "23.4% of the catalog's downloads" in card
    loaded = datasets.load_dataset("platform/trnsim-coverage", split="train")
    assert loaded.num_rows == 9
    assert sorted(loaded["model_id"])[:2] == ["org/breaks", "org/gated"]


def test_publish_refuses_a_folder_it_did_not_write(tmp_path: Path) -> None:
    out = write_sweep(tmp_path / "out", sweep_records())
    site = tmp_path / "someone-elses"
    (site / "charts").mkdir(parents=True)
    (site / "README.md").write_text("my project\n")
    (site / "charts" / "logo.png").write_bytes(b"png")
    with pytest.raises(UsageError, match="did not write; use --force"):
        publish(out, str(site))
    assert (site / "README.md").read_text() == "my project\n" and (site / "charts" / "logo.png").exists()
    # Its own earlier publish may be overwritten; --force overrides the refusal.
    publish(out, str(tmp_path / "ours"))
    publish(out, str(tmp_path / "ours"))
    publish(out, str(site), force=True)
    assert (site / ".sweeper-publish").is_file() and (site / "report.md").is_file()
    assert not any(p.name.startswith(".") and ".tmp-" in p.name for p in site.rglob("*"))


def test_model_links_follow_hf_endpoint_without_its_credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_ENDPOINT", "https://user:s3cret@hf-mirror.example.org:8443/")
    out = write_sweep(tmp_path / "out", sweep_records())
    site = Path(publish(out, str(tmp_path / "site")))
    report = (site / "report.md").read_text()
    assert "[org/lstm-dtype](https://hf-mirror.example.org:8443/org/lstm-dtype)" in report
    assert "huggingface.co" not in report and "s3cret" not in report
    page = (site / "index.html").read_text()
    assert '"hub":"https://hf-mirror.example.org:8443"' in page and "s3cret" not in page
