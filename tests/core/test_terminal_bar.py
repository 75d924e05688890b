"""Progress output: plain lines off a terminal, a redrawn bar on one."""

from __future__ import annotations

import io
import re
import subprocess
import sys
import time

from sweeper.executors.breadcrumbs import Breadcrumb
from sweeper.records import ModelRef, Reason, ReasonKind, Status, base_record
from sweeper.report import terminal_bar as progress_module
from sweeper.report.terminal_bar import TerminalBar


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _rec(name: str, status: Status, reason: Reason | None = None):
    rec = base_record(ModelRef(model_id=name, rank=1), sweep_id="s", device="trnsim", status=status)
    rec.reason = reason
    return rec


def test_plain_lines_name_model_status_and_reason():
    out = io.StringIO()
    progress = TerminalBar(2, already_done=3, stream=out)
    progress.update(_rec("org/a", Status.PASS))
    progress.update(_rec("org/b", Status.FAIL, Reason(ReasonKind.UNSUPPORTED_OP, "x", op="aten::foo")))
    progress.close()
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("[1/2] pass") and "org/a" in lines[0]
    assert lines[1].startswith("[2/2] fail") and "[unsupported_op aten::foo]" in lines[1]
    assert "1 fail, 1 pass" in lines[2] and "3 already recorded" in lines[2]


def test_terminal_gets_one_redrawn_bar_with_eta_and_model():
    out = _Tty()
    progress = TerminalBar(4, stream=out)
    progress.update(_rec("org/first", Status.PASS))
    progress.update(_rec("org/second", Status.SKIP))
    text = out.getvalue()
    assert "\n" not in text and text.count("\r") == 2
    assert "2/4" in text and "ETA" in text and "org/second" in text and "pass 1 skip 1" in text


def test_terminal_names_each_failing_model_and_its_reason_as_it_happens():
    out = _Tty()
    progress = TerminalBar(3, stream=out)
    progress.update(_rec("org/ok", Status.PASS))
    progress.update(_rec("org/bad", Status.FAIL, Reason(ReasonKind.UNSUPPORTED_OP, "no kernel for aten::foo\nmore", op="aten::foo")))
    lines = out.getvalue().split("\n")
    assert len(lines) == 2  # one line printed above the bar, the bar still live below it
    assert "fail" in lines[0] and "org/bad [unsupported_op aten::foo]: no kernel for aten::foo" in lines[0]
    assert "more" not in lines[0] and "2/3" in lines[1]


class _Running:
    def __init__(self, *items):
        self.items = list(items)

    def __call__(self):
        return self.items


def test_the_bar_shows_running_models_with_stage_and_elapsed_time_between_records():
    out = _Tty()
    progress = TerminalBar(2, stream=out)
    progress.watch(_Running(Breadcrumb(key="org/slow::LlamaForCausalLM", stage="compile", started=time.time() - 75)))
    deadline = time.monotonic() + 10
    while "org/slow (compile 1m1" not in out.getvalue() and time.monotonic() < deadline:
        time.sleep(0.05)  # redrawn every second by itself, with no record arriving
    progress.close()
    assert "0/2" in out.getvalue() and "org/slow (compile 1m1" in out.getvalue()


def test_off_a_terminal_a_heartbeat_names_what_runs(monkeypatch):
    monkeypatch.setattr(progress_module, "HEARTBEAT_S", 0.0)
    monkeypatch.setattr(progress_module, "REDRAW_S", 0.05)
    out = io.StringIO()
    progress = TerminalBar(5, stream=out)
    progress.say("starting Ray (local) ...")
    progress.watch(_Running(Breadcrumb(key="org/a", stage=None, started=time.time())))
    deadline = time.monotonic() + 10
    while "running" not in out.getvalue() and time.monotonic() < deadline:
        time.sleep(0.05)
    progress.close()
    lines = out.getvalue().splitlines()
    assert lines[0] == "starting Ray (local) ..."
    assert any(line.startswith("... 0/5 done; running org/a (starting 0s)") for line in lines)


def test_reused_records_say_whose_check_they_share():
    out = io.StringIO()
    progress = TerminalBar(1, stream=out)
    rec = _rec("org/b", Status.PASS)
    rec.reused_from = "org/a"
    progress.update(rec)
    assert "org/b" in out.getvalue() and "(reused from org/a)" in out.getvalue()


def test_quiet_prints_nothing():
    out = io.StringIO()
    progress = TerminalBar(1, stream=out, quiet=True)
    progress.update(_rec("org/a", Status.PASS))
    progress.close()
    assert out.getvalue() == ""


def test_the_first_line_comes_before_torch_is_imported(tmp_path):
    catalog = tmp_path / "c.csv"
    catalog.write_text("rank,id,library_name\n1,org/net,timm\n")
    # trnsim's availability check imports torch while planning: the seconds a person waits.
    cmd = [sys.executable, "-X", "importtime", "-m", "sweeper.cli", "--catalog", str(catalog), "--executor", "inline", "-d", "trnsim",
           "--out", str(tmp_path / "out"), "--no-report"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stderr.splitlines()
    first = next(i for i, line in enumerate(lines) if not line.startswith("import time:"))
    torch = next(i for i, line in enumerate(lines) if re.search(r"\|\s+torch$", line))
    assert lines[first].startswith("sweep: planning (catalog source, device trnsim") and first < torch
    assert any(line.startswith("running 1 check in this process") for line in lines)


def test_copies_of_a_check_arriving_together_redraw_the_bar_a_few_times_not_each():
    out = _Tty()
    progress = TerminalBar(1001, stream=out)
    progress.update(_rec("org/ran", Status.PASS))
    for i in range(1000):
        copy = _rec(f"org/copy-{i}", Status.PASS)
        copy.reused_from = "org/ran"
        progress.update(copy)
    assert progress.done == 1001
    assert out.getvalue().count("\r") < 50  # 1,001 updates in well under a second
    progress.close()
    assert "1001/1001" in out.getvalue()
