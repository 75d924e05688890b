"""progress: what a worker publishes survives it and reads back whole."""

from __future__ import annotations

from sweeper.executors import progress


def test_mark_is_a_noop_outside_a_worker():
    progress.mark(stage="forward", op="aten::mm")  # must not raise without attach()


def test_marks_read_back_from_the_file(tmp_path, monkeypatch):
    monkeypatch.setattr(progress, "_STATE", progress._State())
    path = tmp_path / "w.progress"
    progress.attach(path)
    progress.begin("org/model::BertModel")
    progress.mark(stage="forward")
    progress.mark(op="aten::addmm")
    got = progress.read(path)
    assert (got.key, got.stage, got.op) == ("org/model::BertModel", "forward", "aten::addmm")
    assert got.describe() == "in stage forward, last op aten::addmm"
    progress.mark(stage="backward")  # a new stage forgets the previous stage's op
    assert progress.read(path).op is None
    progress.begin("next")
    assert progress.read(path).stage is None
    assert progress.current().key == "next"


def test_unreadable_or_torn_files_give_empty_progress(tmp_path):
    assert progress.read(tmp_path / "missing") == progress.Progress()
    torn = tmp_path / "torn"
    torn.write_bytes((10).to_bytes(4, "little") + b"\0" * 4 + b"only\x1ftwo")
    assert progress.read(torn) == progress.Progress()
    assert progress.Progress().describe() == "before any stage"
