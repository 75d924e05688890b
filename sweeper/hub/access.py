"""How sweeper reaches the Hugging Face Hub: where, whether at all, and which secret stays home.

The one place for the Hub access rules every caller follows:

- **where**: ``endpoint()`` is ``HF_ENDPOINT`` read now (a mirror set after import still
  counts), else the client's configured default; ``shown_endpoint()`` is the same without
  any ``user:password`` part, for printing and records;
- **whether**: ``hub_offline()`` honours ``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE`` and
  the client's own offline mode; ``probe()`` asks the Hub for one model within a timeout;
  ``settle_hub_access()`` decides, once per sweep, to go offline (``go_offline()``) when
  refs would fetch their configs from a Hub that does not answer;
- **which token**: ``HF_TOKEN`` (or the token the client has stored) is sent by the client
  as usual, but never put into text that leaves: ``redact`` scrubs it, ``one_line`` turns
  an exception into one scrubbed line.

It imports no other sweeper module, so every layer (sources, materialisers, the report)
may use it.
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

if TYPE_CHECKING:
    from sweeper.records import ModelRef

TOKEN_VARIABLES = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
_OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
_TRUE = frozenset({"1", "ON", "YES", "TRUE"})


def endpoint() -> str:
    """The Hub URL in use: ``HF_ENDPOINT`` now, else the client's configured default."""
    from huggingface_hub import constants

    return (os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")


def shown_endpoint() -> str:
    """``endpoint()`` without any user:password part, for printing and records."""
    parts = urlsplit(endpoint())
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def hub_offline() -> bool:
    """True when ``HF_HUB_OFFLINE`` (or ``TRANSFORMERS_OFFLINE``) asks for no network."""
    from huggingface_hub import constants

    env = next((os.environ[name] for name in _OFFLINE_VARIABLES if os.environ.get(name)), "")
    return env.strip().upper() in _TRUE or constants.is_offline_mode()


def go_offline() -> None:
    """Offline for this process (the client read the variable at import) and its children."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    from huggingface_hub import constants

    constants.HF_HUB_OFFLINE = True


def stored_token() -> str:
    """The token the Hub client would send (a token file too); ``""`` when none or unreadable."""
    # A broken token file must not hide the message being redacted.
    with contextlib.suppress(Exception):
        from huggingface_hub import get_token

        return get_token() or ""
    return ""


def redact(text: str) -> str:
    """``text`` with any Hub token in use replaced by ``***``."""
    secrets = {os.environ.get(name, "") for name in TOKEN_VARIABLES} | {stored_token()}
    for secret in secrets:
        if len(secret) >= 4:
            text = text.replace(secret, "***")
    return text


def one_line(exc: BaseException) -> str:
    """An exception as one redacted line: ``Type: first words``."""
    words = " ".join(str(exc).split())
    return redact(f"{type(exc).__name__}: {words}" if words else type(exc).__name__)


def probe(timeout: float) -> str | None:
    """Ask the Hub for one model; ``None`` when it answered in time, else why not."""
    if hub_offline():
        return "HF_HUB_OFFLINE is set"
    from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status

    url = f"{endpoint()}/api/models"
    try:
        response = get_session().get(url, params={"limit": 1}, headers=build_hf_headers(), timeout=timeout)
        hf_raise_for_status(response)
        if not isinstance(response.json(), list):
            return f"{shown_endpoint()} answered, but not with a model listing"
    except Exception as exc:  # noqa: BLE001 - timeouts, refused connections, HTTP errors, bad JSON
        return f"{shown_endpoint()}: {one_line(exc)}"
    return None


def settle_hub_access(refs: list[ModelRef], *, timeout: float, weights: str) -> str | None:
    """Probe the Hub once (within ``timeout`` seconds) when refs would fetch their
    config.json from it; ``weights`` is the sweep's weights mode, for the note.

    When it does not answer, the sweep goes offline (``HF_HUB_OFFLINE=1``, inherited by
    workers started afterwards) so each model starts from its type's default config at
    once instead of retrying the network; returns the note that says so.
    """
    wants_hub = any(ref.config is None and ref.source not in (None, "zoo") for ref in refs)
    if not wants_hub:
        return None
    if hub_offline():
        # The client may have read the variable before it was set (huggingface_hub 1.x
        # reads it once, at import): tell it too, or it retries a Hub it must not ask.
        go_offline()
        return None
    why = probe(timeout)
    if why is None:
        return None
    go_offline()
    if weights == "pretrained":
        return f"Hub unreachable ({why}): pretrained weights will fail as download errors"
    return f"Hub unreachable ({why}): configs are the model types' defaults"
