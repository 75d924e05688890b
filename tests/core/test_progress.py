"""Progress output: plain lines off a terminal, a redrawn bar on one."""

from __future__ import annotations

import io

from sweeper.progress import Progress
from sweeper.records import ModelRef, Reason, ReasonKind, Status, base_record


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _rec(name: str, status: Status, reason: Reason | None = None):
    rec = base_record(ModelRef(model_id=name, rank=1), sweep_id="s", device="trnsim", status=status)
    rec.reason = reason
    return rec


def test_plain_lines_name_model_status_and_reason():
    out = io.StringIO()
    progress = Progress(2, already_done=3, stream=out)
    progress.update(_rec("org/a", Status.PASS))
    progress.update(_rec("org/b", Status.FAIL, Reason(ReasonKind.UNSUPPORTED_OP, "x", op="aten::foo")))
    progress.close()
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("[1/2] pass") and "org/a" in lines[0]
    assert lines[1].startswith("[2/2] fail") and "[unsupported_op aten::foo]" in lines[1]
    assert "1 fail, 1 pass" in lines[2] and "3 already recorded" in lines[2]


def test_terminal_gets_one_redrawn_bar_with_eta_and_model():
    out = _Tty()
    progress = Progress(4, stream=out)
    progress.update(_rec("org/first", Status.PASS))
    progress.update(_rec("org/second", Status.FAIL))
    text = out.getvalue()
    assert "\n" not in text and text.count("\r") == 2
    assert "2/4" in text and "ETA" in text and "org/second" in text and "fail 1 pass 1" in text


def test_quiet_prints_nothing():
    out = io.StringIO()
    progress = Progress(1, stream=out, quiet=True)
    progress.update(_rec("org/a", Status.PASS))
    progress.close()
    assert out.getvalue() == ""
