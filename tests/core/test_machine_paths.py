"""What a sweep writes names no folder of the machine that ran it; what it prints still does."""

from __future__ import annotations

import io
import os
import sys
import tempfile

from sweeper.machine_paths import strip_machine_paths
from sweeper.records import ModelRecord, Status
from sweeper.redact import RedactingStream


def test_paths_under_known_places_keep_their_part_below_the_place(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    site = next(p for p in sys.path if p.endswith("site-packages"))
    text = (f"pipeline' {tempfile.gettempdir()}/UnnammedModule.mlir\n"
            f'File "{site}/torch/_dynamo/eval_frame.py", line 3\n'
            f"catalog {tmp_path}/catalogs/top.csv; cache {os.path.expanduser('~')}/.cache/huggingface/hub")
    out = strip_machine_paths(text)
    assert out == ("pipeline' <tmp>/UnnammedModule.mlir\n"
                   'File "<site-packages>/torch/_dynamo/eval_frame.py", line 3\n'
                   "catalog ./catalogs/top.csv; cache ~/.cache/huggingface/hub")
    assert strip_machine_paths(out) == out  # stripped once is stripped


def test_other_absolute_paths_of_this_machine_keep_their_file_name_and_the_rest_stays():
    top = next(entry for entry in sorted(os.listdir("/")) if os.path.isdir("/" + entry))
    assert strip_machine_paths(f"read /{top}/elsewhere/data/x.csv failed") == "read …/x.csv failed"
    for kept in ("google-bert/bert-base-uncased", "12.3 it/s", "aten::add.Tensor", "http://127.0.0.1:8/api/models/a/b",
                 "GET /api/models/org/name: 404", "a/b/c", "forward / backward"):
        assert strip_machine_paths(kept) == kept


def test_records_lose_machine_paths_and_the_terminal_keeps_them(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    record = ModelRecord(sweep_id="s", model_id="org/model", key="org/model", device="cpu", status=Status.FAIL, rank=1)
    record.notes["where"] = f"{tmp_path}/models/org/model/config.json"
    assert record.to_dict()["notes"]["where"] == "./models/org/model/config.json"
    shown = io.StringIO()
    RedactingStream(shown).write(f"records: {tmp_path}/records.jsonl\n")
    assert shown.getvalue() == f"records: {tmp_path}/records.jsonl\n"
