"""index.html as a file (no browser): self-contained, its data blob cannot be broken out
of, and ``sweep serve`` shows it on loopback only."""

from __future__ import annotations

import json
import re
import threading
import urllib.request
from pathlib import Path

import pytest
from report_factory import reason, record, write_sweep
from test_report_markdown import sweep_records

from sweeper.cli import main
from sweeper.report.commands import write_report
from sweeper.report.page import script_json
from sweeper.report.publish import publish
from sweeper.report.serve import make_server
from sweeper.settings.errors import UsageError

EVIL = "org/x</script><script>alert(1)</script><!--"


def page_of(tmp_path: Path, records: list) -> str:
    out = write_sweep(tmp_path / "out", records)
    write_report(out, charts=False)
    return (out / "index.html").read_text(encoding="utf-8")


def data_of(page: str) -> dict:
    blob = re.search(r'<script type="application/json" id="sweep-data">(.*?)</script>', page, re.S)
    assert blob is not None
    return json.loads(blob.group(1))


def test_script_json_cannot_close_its_element() -> None:
    text = script_json({"id": EVIL, "sep": "a\u2028b"})
    assert "<" not in text and ">" not in text and "\u2028" not in text
    assert json.loads(text) == {"id": EVIL, "sep": "a\u2028b"}


def test_page_is_self_contained_and_holds_every_model(tmp_path: Path) -> None:
    records = [*sweep_records(), record(EVIL, 10, 1, "fail", fail_at="load", blockers=[reason("oom", None, EVIL)])]
    page = page_of(tmp_path, records)
    assert page.count("</script>") == 2 and page.count("<script") == 2  # the data and the page's own code
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)  # nothing from the network
    data = data_of(page)
    assert data["rows"]["id"][-1] == EVIL and len(data["rows"]["id"]) == 10
    strings = data["strings"]
    row = data["rows"]["id"].index("org/up-lstm")
    assert data["rows"]["stages"][row] == "ppfbbb"
    assert strings[data["rows"]["origin"][row]] == "device"
    assert strings[data["rows"]["repro"][row]] == "sweep one \x00 --device trnsim --weights tiny"
    gated = data["rows"]["id"].index("org/gated")
    assert strings[data["rows"]["origin"][gated]] == "environment"
    assert [r[0] for r in data["roadmap"]] == ["aten::upsample_bilinear2d", "aten::_thnn_fused_lstm_cell"]


def test_each_model_shows_the_origin_the_report_counts_it_under(tmp_path: Path) -> None:
    data = data_of(page_of(tmp_path, sweep_records()))
    rows, strings = data["rows"], data["strings"]
    origin = {mid: strings[o] for mid, o in zip(rows["id"], rows["origin"])}
    assert origin["org/up-lstm"] == "device" and origin["org/gated"] == "environment"
    assert origin["org/skipped"] == "harness"  # not tried: its reason's origin
    assert origin["org/pass-a"] == ""


def test_serve_answers_on_loopback_only(tmp_path: Path) -> None:
    out = write_sweep(tmp_path / "out", sweep_records())
    write_report(out, charts=False)
    server = make_server(out, 0)
    host, port = server.server_address[:2]
    assert host == "127.0.0.1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as reply:
            assert reply.status == 200 and b'id="sweep-data"' in reply.read()
    finally:
        server.shutdown()
        server.server_close()


def test_serve_without_a_page_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["serve", str(tmp_path)])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("sweep: error: no index.html in") and err.count("\n") == 1


def test_a_bad_compare_folder_leaves_the_destination_untouched(tmp_path: Path) -> None:
    out = write_sweep(tmp_path / "out", sweep_records())
    with pytest.raises(UsageError, match="not a sweep folder"):
        publish(out, str(tmp_path / "site"), compare=tmp_path / "missing")
    assert not (tmp_path / "site").exists()
    with pytest.raises(UsageError, match="another sweep"):
        publish(out, str(tmp_path / "site"), compare=out)


def test_crash_timeout_and_oom_stages_have_their_own_marks(tmp_path: Path) -> None:
    died = {"crash": reason("crash", None, "worker died of SIGSEGV"), "timeout": reason("timeout"),
            "oom": reason("oom", None, "worker exceeded --memory-limit-mb")}
    records = []
    for rank, (how, why) in enumerate(died.items(), start=1):
        status = "crash" if how == "oom" else how
        records.append(record(f"org/{how}", rank, 10, status, blockers=[why], notes={"stage": "backward"}))
    data = data_of(page_of(tmp_path, records))
    marks = dict(zip(data["rows"]["id"], data["rows"]["stages"]))
    assert marks == {"org/crash": "pppcbb", "org/timeout": "ppptbb", "org/oom": "pppobb"}
