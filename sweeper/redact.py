"""The one redactor: secrets out of every text the sweeper writes or prints.

Applied where text leaves the process: record serialisation (``ModelRecord.to_dict``,
hence records.jsonl, records.parquet and ``sweep one --json``), ``sweep.json``, the report
files and published copies (``sweeper.atomic``), and the CLI's stdout/stderr
(``RedactingStream``). It removes:

- Hugging Face tokens (``hf_...``);
- the value after ``Authorization:`` and after ``Bearer`` / ``Basic``;
- ``user:password@`` in URLs;
- the value of every environment variable named ``*_TOKEN``, ``*_KEY``, ``*_SECRET``
  (plus ``HF_TOKEN``-style names and the token huggingface_hub has stored), and the
  password of any URL held in the environment (``HF_ENDPOINT=http://user:pass@host``);
- Ray's cluster token wherever Ray reads it: ``RAY_AUTH_TOKEN`` (a ``*_TOKEN``), the
  file ``RAY_AUTH_TOKEN_PATH`` names and ``~/.ray/auth_token``.

What goes to files also loses the machine's own paths (``sweeper.machine_paths``): a
published folder names no folder of the machine that made it. The CLI's own printout keeps
them, since they are the user's to read.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
from typing import Any, TextIO
from urllib.parse import unquote, urlsplit

from sweeper.machine_paths import strip_machine_paths

MASK = "***"
MIN_SECRET = 6  # shorter values ("1", "true") would mask ordinary words
_SECRET_NAME = re.compile(r"(?:^|_)(?:TOKEN|KEY|SECRET|PASSWORD|PASSWD)$", re.IGNORECASE)
# (pattern, replacement, lower-case substrings one of which must occur for it to match):
# the cheap substring test keeps serialising a record fast when it holds no secret.
_PATTERNS: tuple[tuple[re.Pattern[str], str, tuple[str, ...]], ...] = (
    # Authorization: Bearer xyz / authorization=xyz / "Authorization": "Basic xyz"
    (re.compile(r"""(?i)(authorization["']?\s*[:=]\s*["']?)(?:(?:bearer|basic|token)\s+)?[^\s"',;}]+"""), r"\g<1>" + MASK, ("authorization",)),
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{4,}"), r"\g<1> " + MASK, ("bearer", "basic")),
    (re.compile(r"\bhf_[A-Za-z0-9]{6,}"), "hf_" + MASK, ("hf_",)),
    # scheme://user:pass@host -> scheme://***@host
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s:@]+:[^/\s@]*@"), r"\g<1>" + MASK + "@", ("://",)),
)


def env_secrets(environ: dict[str, str] | None = None) -> set[str]:
    """Secret values in the environment (and the stored Hub token), long enough to mask."""
    if environ is None:
        # Every record written asks: scanning the environment and reading the token file
        # each time cost a sweep of 100,000 models minutes. The answer is kept until the
        # environment or the token file changes.
        key = (_environ_state(), _token_file_state(), _ray_token_state())
        if _SECRETS_MEMO.get("key") != key:
            _SECRETS_MEMO["value"] = frozenset(_scan(os.environ) | _stored_hub_token())
            _SECRETS_MEMO["key"] = key
        return set(_SECRETS_MEMO["value"])
    return _scan(environ)


_SECRETS_MEMO: dict[str, Any] = {}


def _environ_state() -> tuple:
    """The whole environment, cheaply comparable (CPython keeps it as bytes)."""
    data = getattr(os.environ, "_data", None)
    return tuple(data.items()) if isinstance(data, dict) else tuple(os.environ.items())


def _token_file_state() -> tuple:
    """Whether huggingface_hub is loaded and its token file's identity (a login changes it)."""
    import sys

    hub = sys.modules.get("huggingface_hub.constants")
    if hub is None:
        return ("huggingface_hub" in sys.modules,)
    paths = [getattr(hub, "HF_TOKEN_PATH", None), getattr(hub, "HF_STORED_TOKENS_PATH", None)]
    state: list[Any] = [True]
    for path in paths:
        try:
            st = os.stat(path) if path else None
            state.append((path, st.st_mtime_ns, st.st_size, st.st_ino) if st else None)
        except OSError:
            state.append((path, None))
    return tuple(state)


def _ray_token_state() -> tuple:
    """The identity of the files Ray reads its token from (a new token changes it)."""
    state = []
    for path in _ray_token_paths(os.environ):
        try:
            st = os.stat(path)
            state.append((path, st.st_mtime_ns, st.st_size, st.st_ino))
        except OSError:
            state.append((path, None))
    return tuple(state)


def _scan(env: Any) -> set[str]:
    """Secret values in ``env`` (names like ``*_TOKEN``, passwords of URLs)."""
    found: set[str] = set()
    for name, value in env.items():
        if _SECRET_NAME.search(name) and len(value) >= MIN_SECRET:
            found.add(value)
        if "://" in value and "@" in value:  # a URL with credentials: its password is a secret
            with contextlib.suppress(ValueError):
                password = urlsplit(value.strip()).password
                if password and len(password) >= MIN_SECRET:
                    found.update({password, unquote(password)})
    found.update(_ray_token_files(env))
    return found


def _ray_token_files(env: Any) -> set[str]:
    """The tokens in the files Ray reads one from (``RAY_AUTH_TOKEN_PATH``, ``~/.ray/auth_token``)."""
    found: set[str] = set()
    for path in _ray_token_paths(env):
        token = _file_secret(path)
        if len(token) >= MIN_SECRET:
            found.add(token)
    return found


def _ray_token_paths(env: Any) -> list[str]:
    paths = [env.get("RAY_AUTH_TOKEN_PATH", "").strip(), os.path.join(env.get("HOME") or os.path.expanduser("~"), ".ray", "auth_token")]
    return [os.path.expanduser(p) for p in paths if p]


def _file_secret(path: str) -> str:
    """The stripped text of a small secret file, "" when absent; read again only when it changes."""
    try:
        stat = os.stat(path)
    except OSError:
        return ""
    return _read_secret(path, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=8)
def _read_secret(path: str, mtime_ns: int, size: int) -> str:  # noqa: ARG001 - the cache key
    if size > 64 * 1024:  # not a token file
        return ""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read().strip()
    except OSError:
        return ""


def _stored_hub_token() -> set[str]:
    """The token huggingface_hub would send (a token file too), when the client is loaded."""
    import sys

    if "huggingface_hub" not in sys.modules:  # importing the client just to redact is too slow
        return set()
    token = ""
    # Asked of the client directly: this leaf imports nothing of sweeper. A broken token
    # file must not hide the message being redacted.
    with contextlib.suppress(Exception):
        from huggingface_hub import get_token

        token = get_token() or ""
    return {token} if len(token) >= MIN_SECRET else set()


@functools.lru_cache(maxsize=8)
def _alternation(secrets: frozenset[str]) -> re.Pattern[str] | None:
    """One pattern matching any of ``secrets``, longest first (compiled once per set)."""
    if not secrets:
        return None
    return re.compile("|".join(re.escape(s) for s in sorted(secrets, key=len, reverse=True)))


def redact(text: str, secrets: set[str] | None = None, *, paths: bool = True) -> str:
    """``text`` with every secret the module knows of replaced by ``***`` and, with
    ``paths``, the machine's own paths made relative to named places."""
    if len(text) < MIN_SECRET:  # too short to hold any secret, pattern or path
        return text
    return _redact(text, _alternation(frozenset(env_secrets() if secrets is None else secrets)), paths)


def _redact(text: str, found: re.Pattern[str] | None, paths: bool = True) -> str:
    """``redact`` with the secrets' pattern already compiled."""
    if len(text) < MIN_SECRET:
        return text
    if found is not None:
        text = found.sub(MASK, text)
    lower = text.lower()
    for pattern, replacement, triggers in _PATTERNS:
        if any(t in lower for t in triggers):
            text = pattern.sub(replacement, text)
    return strip_machine_paths(text) if paths else text


def redact_obj(value: Any, secrets: set[str] | None = None) -> Any:
    """A copy of a JSON-like value (dicts, lists, strings) with every string redacted,
    machine paths included."""
    # The secrets' pattern is made once for the whole value, not once per string in it.
    return _redact_obj(value, _alternation(frozenset(env_secrets() if secrets is None else secrets)))


def _redact_obj(value: Any, found: re.Pattern[str] | None) -> Any:
    if isinstance(value, str):
        return _redact(value, found)
    if isinstance(value, dict):
        return {k: _redact_obj(v, found) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_redact_obj(v, found) for v in value]
    return value


class RedactingStream:
    """A text stream that redacts each write (the CLI's stdout and stderr)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(redact(text, paths=False))
        return len(text)

    def __getattr__(self, name: str) -> Any:  # isatty, flush, fileno, encoding, ...
        return getattr(self._stream, name)
