"""The store survives being killed mid-write and resumes without duplicates."""

from __future__ import annotations

from sweeper.records import ModelRef, Status, base_record
from sweeper.storage.store import RecordStore, read_records, repair


def _rec(i: int):
    return base_record(ModelRef(model_id=f"m{i}", rank=i), sweep_id="s", device="cpu", status=Status.PASS)


def test_append_and_done_keys(tmp_path):
    with RecordStore(tmp_path) as store:
        for i in range(3):
            store.append(_rec(i))
    assert RecordStore(tmp_path).done_keys() == {"m0", "m1", "m2"}
    assert [r.model_id for r in read_records(tmp_path)] == ["m0", "m1", "m2"]


def test_torn_last_line_is_cut_on_open(tmp_path):
    with RecordStore(tmp_path) as store:
        store.append(_rec(1))
        store.append(_rec(2))
    path = tmp_path / "records.jsonl"
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) - 25])  # killed half-way through the second line
    store = RecordStore(tmp_path).open()
    assert store.repaired_bytes > 0
    store.append(_rec(3))
    store.close()
    lines = path.read_text().splitlines()
    assert [r.model_id for r in read_records(tmp_path)] == ["m1", "m3"]
    assert len(lines) == 2


def test_complete_but_malformed_last_line_is_cut(tmp_path):
    path = tmp_path / "records.jsonl"
    path.write_text(_rec(1).to_json() + "\n{not json\n")
    assert repair(path) == len("{not json\n")
    assert repair(path) == 0


def test_repeated_key_keeps_last(tmp_path):
    with RecordStore(tmp_path) as store:
        store.append(_rec(1))
        later = _rec(1)
        later.status = Status.FAIL
        store.append(later)
    (only,) = read_records(tmp_path)
    assert only.status is Status.FAIL
