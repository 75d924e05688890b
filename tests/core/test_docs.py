"""The README and the guide in docs/ say only what the software does.

Every ``sweep ...`` command line they show is parsed by the CLI's own parser (the click
tree typer builds from ``sweeper.cli.app``): its subcommand exists, each flag exists, each
value converts, and the settings a sweep would be built from pass the same validation a
sweep runs (a weights mode, stage, source, executor or dtype not in the list fails here).
Every relative link resolves to a file of the repository (and a ``#heading`` to a heading
of it). The record page names every field of every record dataclass of
``sweeper/records.py`` in a table under that class's heading, and every value of its enums,
so a field added to the records without a line in the guide fails. The README stays a
front door: at most 200 lines, linking every page of the guide.
"""

from __future__ import annotations

import dataclasses
import enum
import re
import shlex
from pathlib import Path

import pytest
import typer

try:  # typer >= 0.20 vendors click; older releases use the click package
    from typer._click import exceptions as click_exceptions
except ImportError:  # pragma: no cover
    from click import exceptions as click_exceptions

from sweeper import records
from sweeper.cli import app

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
RECORD_PAGE = DOCS / "record.md"
README_MAX_LINES = 200


def doc_files() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


# --- reading markdown ---------------------------------------------------------------------

FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")


def split_markdown(text: str) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """(code-block lines, prose lines) with their 1-based line numbers."""
    code, prose, fenced = [], [], False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        (code if fenced else prose).append((number, line))
    return code, prose


def paragraphs(prose: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Prose joined into paragraphs (an inline code span may wrap a line), each with its
    first line's number; a table row, a heading or a list item starts one of its own."""
    out: list[tuple[int, str]] = []
    joined = False
    for number, line in prose:
        text = line.strip()
        if not text:
            joined = False
        elif joined and not text.startswith(("|", "#", "- ", "* ")) and not out[-1][1].startswith(("|", "#")):
            out[-1] = (out[-1][0], out[-1][1] + " " + text)
        else:
            out.append((number, text))
            joined = True
    return out


# The ways the guide spells the command: the console script, the venv's, or the module.
COMMAND = re.compile(r"^(?:\$\s+)?(?:\.venv/bin/sweep|sweep|(?:\.venv/bin/)?python3? -m sweeper)(?=\s|$)")


def command_lines(path: Path) -> list[tuple[int, str]]:
    """Every ``sweep ...`` command of a file: whole lines of code blocks (a trailing
    backslash continues the line) and inline code spans of prose and tables."""
    code, prose = split_markdown(path.read_text(encoding="utf-8"))
    found: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for number, line in code:
        if pending is not None:
            start, text = pending
            line, number = text + " " + line.strip(), start
            pending = None
        stripped = line.strip()
        if stripped.endswith("\\"):
            pending = (number, stripped[:-1].rstrip())
            continue
        if COMMAND.match(stripped):
            found.append((number, stripped))
    for number, text in paragraphs(prose):
        for match in INLINE_CODE.finditer(text):
            span = match.group(2).strip()
            if COMMAND.match(span):
                found.append((number, span))
    return found


# --- the CLI's own parser -----------------------------------------------------------------

ROOT_COMMAND = typer.main.get_command(app)
# A metavariable standing for a value (N, DIR, HOST:PORT, ORG/NAME): a type the CLI converts
# (a number) is given an example of its own; the flag itself is still checked.
PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_]*(?:[:/.,_-]+[A-Z0-9_]+)*(?:,\.\.\.)?$")
# Setting names the bare sweep's flags stand for, where the two differ (sweeper/cli.py).
SETTING_OF = {"task": "tasks", "library": "libraries", "model_type": "model_types"}
NOT_SETTINGS = {"config", "no_reuse", "no_report", "quiet"}


def parse(command: str):
    """(click command, its parsed params) for one command line; raises click's UsageError
    (an unknown subcommand or flag, a value that does not convert, an extra argument)."""
    args = shlex.split(command, comments=True)
    head = 1 if args[0].endswith("sweep") else 3  # sweep ... | python -m sweeper ...
    args = args[head:]
    if args and args[0] in ROOT_COMMAND.commands:
        name, cmd, args = args[0], ROOT_COMMAND.commands[args[0]], args[1:]
        if not args:  # `sweep report` named in a sentence: the subcommand exists
            return cmd, {}
    elif args and not args[0].startswith("-"):
        raise click_exceptions.UsageError(f"no such subcommand {args[0]!r} (known: {', '.join(ROOT_COMMAND.commands)})")
    else:
        name, cmd = "sweep", ROOT_COMMAND
    if {"--help", "-h"} & set(args):  # help is answered before any other flag is read
        return cmd, {}
    for _ in range(len(args) + 1):
        try:
            ctx = cmd.make_context(name, list(args))
        except click_exceptions.BadParameter as exc:
            at = _placeholder_value(args, exc.param)
            if at is None:
                raise
            args[at] = "1"  # N, S, G: a metavariable for a number
            continue
        left = [*getattr(ctx, "_protected_args", []), *ctx.args]
        if left:
            raise click_exceptions.UsageError(f"unexpected argument(s) {left}")
        return cmd, ctx.params
    raise AssertionError(command)  # pragma: no cover


def _placeholder_value(args: list[str], param) -> int | None:
    """The index of a placeholder given to ``param`` in ``args``, if any."""
    if param is None:
        return None
    opts = set(getattr(param, "opts", [])) | set(getattr(param, "secondary_opts", []))
    for i, token in enumerate(args[:-1]):
        if token in opts and PLACEHOLDER.match(args[i + 1]):
            return i + 1
    return None


def _given(value) -> bool:
    return value is not None and value is not False and value != [] and value != ()


def check_values(cmd, params: dict) -> None:
    """What the CLI would refuse after parsing: the settings a sweep (or ``sweep one``,
    ``sweep catalog``) builds from these flags, validated as the sweep validates them, and
    the device and profile names."""
    from sweeper.devices.base import known_devices
    from sweeper.settings.config import build_config
    from sweeper.settings.errors import UsageError

    name = "sweep" if cmd is ROOT_COMMAND else cmd.name
    if not params:  # a subcommand named in a sentence
        return
    if name in ("sweep", "one"):
        skip = NOT_SETTINGS | ({"library", "model_type", "task", "revision", "architecture", "as_json", "model"} if name == "one" else set())
        settings = {SETTING_OF.get(k, k) if name == "sweep" else k: v for k, v in params.items()
                    if k not in skip and _given(v) and not (isinstance(v, str) and PLACEHOLDER.match(v))}
    elif name == "catalog":
        settings = {"source": params["source"], "top": params["top"]}
        if _given(params.get("path")):
            settings["catalog"] = params["path"]
            settings["source"] = "catalog" if params["source"] == "auto" else params["source"]
    else:
        return
    try:
        build_config(settings)
    except UsageError as exc:
        raise click_exceptions.UsageError(str(exc)) from None
    device = params.get("device")
    if _given(device) and not PLACEHOLDER.match(device):
        base = device.split(":", 1)[0]
        assert base in known_devices(), f"unknown device {device!r}; known: {', '.join(known_devices())}"
    profile = params.get("device_profile")
    if _given(profile) and not PLACEHOLDER.match(profile) and not profile.endswith(".toml"):
        shipped = {p.stem for p in (ROOT / "sweeper" / "devices" / "trnsim" / "profiles").glob("*.toml")}
        assert profile in shipped, f"--device-profile {profile!r} is no shipped profile ({', '.join(sorted(shipped))})"


def test_the_guide_shows_commands():
    # The front door's commands are read: a change to the extraction that finds none fails.
    assert len(command_lines(README)) >= 5
    assert sum(1 for path in doc_files() if command_lines(path)) >= 5


# One test per page (its id the file, not a line: the lines move while the guide is edited).
@pytest.mark.parametrize("path", doc_files(), ids=_rel)
def test_every_sweep_command_parses_with_the_cli(path):
    refused = []
    for number, line in command_lines(path):
        try:
            cmd, params = parse(line)
            check_values(cmd, params)
        except (click_exceptions.UsageError, AssertionError) as exc:
            why = exc.format_message() if isinstance(exc, click_exceptions.UsageError) else str(exc)
            refused.append(f"{_rel(path)} line {number}: `{line}`: {why}")
    assert not refused, "\n".join(refused)


OPTION_CELL = re.compile(r"^\|\s*((?:`--[a-z][a-z0-9-]*[^`]*`[,\s]*)+)\|")


def test_every_flag_in_an_options_table_exists():
    """A table row whose first cell names flags (``| `--device D` | ...``) names flags the
    CLI has, on the bare sweep or a subcommand."""
    known = {opt for cmd in [ROOT_COMMAND, *ROOT_COMMAND.commands.values()] for p in cmd.params
             for opt in [*getattr(p, "opts", []), *getattr(p, "secondary_opts", [])]}
    unknown = []
    for path in doc_files():
        _, prose = split_markdown(path.read_text(encoding="utf-8"))
        for number, line in prose:
            cell = OPTION_CELL.match(line)
            if not cell:
                continue
            for span in INLINE_CODE.findall(cell.group(1)):
                flag = span[1].split()[0]
                if flag not in known:
                    unknown.append(f"{_rel(path)} line {number}: {flag}")
    assert not unknown, unknown


# --- links ----------------------------------------------------------------------------------

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, markup and punctuation out, spaces to -."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    _, prose = split_markdown(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for _, line in prose:
        heading = HEADING.match(line)
        if heading:
            base, n = slug(heading.group(2)), 1
            name = base
            while name in found:
                name, n = f"{base}-{n}", n + 1
            found.add(name)
    return found


def relative_links(path: Path) -> list[tuple[int, str]]:
    _, prose = split_markdown(path.read_text(encoding="utf-8"))
    out = []
    for number, text in paragraphs(prose):
        for target in LINK.findall(INLINE_CODE.sub("", text)):
            if not re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:, hf:
                out.append((number, target))
    return out


def test_every_relative_link_resolves():
    broken = []
    for path in doc_files():
        for number, target in relative_links(path):
            file, _, anchor = target.partition("#")
            resolved = (path.parent / file).resolve() if file else path
            where = f"{_rel(path)} line {number}: {target}"
            if not resolved.exists() or ROOT not in (resolved, *resolved.parents):
                broken.append(f"{where} (no such file)")
            elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
                broken.append(f"{where} (no heading #{anchor})")
    assert not broken, "\n".join(broken)


def test_the_readme_is_a_front_door_to_every_page_of_the_guide():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines (at most {README_MAX_LINES})"
    linked = {(README.parent / target.partition("#")[0]).resolve() for _, target in relative_links(README)}
    pages = sorted(DOCS.glob("*.md"))
    assert pages, "docs/ holds the guide"
    assert not [p.name for p in pages if p.resolve() not in linked], "pages the README does not link"


def test_every_page_of_the_guide_opens_with_who_it_is_for():
    """A page starts with its title and a paragraph saying what it is for and who reads it."""
    for page in sorted(DOCS.glob("*.md")):
        lines = [line for line in page.read_text(encoding="utf-8").splitlines() if line.strip()]
        assert lines[0].startswith("# "), page.name
        assert "read" in lines[1].lower() or "for " in lines[1].lower(), f"{page.name}: {lines[1]!r}"


# --- the record ------------------------------------------------------------------------------


def record_dataclasses() -> list[type]:
    return [obj for obj in vars(records).values()
            if isinstance(obj, type) and dataclasses.is_dataclass(obj) and obj.__module__ == records.__name__]


def record_enums() -> list[type[enum.Enum]]:
    return [obj for obj in vars(records).values()
            if isinstance(obj, type) and issubclass(obj, enum.Enum) and obj.__module__ == records.__name__]


def sections(path: Path) -> list[tuple[str, list[str]]]:
    """(heading, the lines under it up to the next heading) for every heading of ``path``."""
    _, prose = split_markdown(path.read_text(encoding="utf-8"))
    out: list[tuple[str, list[str]]] = []
    for _, line in prose:
        heading = HEADING.match(line)
        if heading:
            out.append((heading.group(2), []))
        elif out:
            out[-1][1].append(line)
    return out


FIRST_CELL = re.compile(r"^\|\s*`([A-Za-z_][A-Za-z0-9_]*)`")


def test_the_record_page_names_every_field_of_every_record_type():
    assert RECORD_PAGE.exists(), "docs/record.md describes the record"
    found = sections(RECORD_PAGE)
    problems = []
    for cls in record_dataclasses():
        mine = [lines for heading, lines in found if f"`{cls.__name__}`" in heading]
        if not mine:
            problems.append(f"no heading names `{cls.__name__}`")
            continue
        named = {m.group(1) for lines in mine for line in lines if (m := FIRST_CELL.match(line))}
        fields = {f.name for f in dataclasses.fields(cls)}
        if fields - named:
            problems.append(f"{cls.__name__}: fields without a row: {sorted(fields - named)}")
        if named - fields:
            problems.append(f"{cls.__name__}: rows for fields it does not have: {sorted(named - fields)}")
    assert not problems, "\n".join(problems)


def test_the_record_page_names_every_value_of_the_record_enums():
    _, prose = split_markdown(RECORD_PAGE.read_text(encoding="utf-8"))
    spans = {m.group(2).strip() for _, text in paragraphs(prose) for m in INLINE_CODE.finditer(text)}
    missing = {cls.__name__: sorted(m.value for m in cls if m.value not in spans) for cls in record_enums()}
    assert not {k: v for k, v in missing.items() if v}, missing


def test_the_check_finds_what_it_is_for(tmp_path):
    """The checks fail on what they exist to catch: a flag the CLI lacks, a value it
    refuses, a subcommand it does not have, a broken link, a field without a row."""
    for bad in ("sweep --top 5 --no-such-flag", "sweep --weights huge", "sweep --stages load,fly",
                "sweep --executor spark", "sweep frobnicate runs/x", "sweep --top many", "sweep serve site --port x",
                "sweep --device warp9", "python -m sweeper --dtype float8"):
        with pytest.raises((click_exceptions.UsageError, AssertionError)):
            cmd, params = parse(bad)
            check_values(cmd, params)
    for good in ("sweep --top N --device D --out DIR", "sweep one bert --device cuda:1", "sweep catalog --source zoo --top 20",
                 "sweep --stages load,to_device,forward --device trnsim --device-profile trnsim-tf32"):
        check_values(*parse(good))
    page = tmp_path / "page.md"
    page.write_text("# T\n\nsee [x](no-such.md) and `sweep --nope`, `sweep --top 5\n--wrapped`\n\n```\nsweep --top 5 \\\n  --bogus\n```\n")
    assert [line for _, line in command_lines(page)] == ["sweep --top 5 --bogus", "sweep --nope", "sweep --top 5 --wrapped"]
    assert relative_links(page) == [(3, "no-such.md")]
    assert slug("Whose is a blocker: origins and the `CPU` control") == "whose-is-a-blocker-origins-and-the-cpu-control"
