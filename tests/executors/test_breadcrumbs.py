"""progress: what a worker publishes survives it and reads back whole."""

from __future__ import annotations

from sweeper.executors import breadcrumbs


def test_mark_is_a_noop_outside_a_worker():
    breadcrumbs.mark(stage="forward", op="aten::mm")  # must not raise without attach()


def test_marks_read_back_from_the_file(tmp_path, monkeypatch):
    monkeypatch.setattr(breadcrumbs, "_STATE", breadcrumbs._State())
    path = tmp_path / "w.progress"
    breadcrumbs.attach(path)
    breadcrumbs.begin("org/model::BertModel")
    breadcrumbs.mark(stage="forward")
    breadcrumbs.mark(op="aten::addmm")
    got = breadcrumbs.read(path)
    assert (got.key, got.stage, got.op) == ("org/model::BertModel", "forward", "aten::addmm")
    assert got.describe() == "in stage forward, last op aten::addmm"
    breadcrumbs.mark(stage="backward")  # a new stage forgets the previous stage's op
    assert breadcrumbs.read(path).op is None
    breadcrumbs.begin("next")
    assert breadcrumbs.read(path).stage is None
    assert breadcrumbs.current().key == "next"


def test_unreadable_or_torn_files_give_empty_progress(tmp_path):
    assert breadcrumbs.read(tmp_path / "missing") == breadcrumbs.Breadcrumb()
    torn = tmp_path / "torn"
    torn.write_bytes((10).to_bytes(4, "little") + b"\0" * 4 + b"only\x1ftwo")
    assert breadcrumbs.read(torn) == breadcrumbs.Breadcrumb()
    assert breadcrumbs.Breadcrumb().describe() == "before any stage"
