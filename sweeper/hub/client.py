"""Which HTTP client the installed huggingface_hub speaks: httpx2 (hub 2.x) or httpx (1.x).

The two share an API (transports, requests, the transport errors); sweeper plugs its
retrying transport into whichever the client uses, so it runs with either major version.
"""

from __future__ import annotations

import functools
from types import ModuleType


@functools.lru_cache(maxsize=1)
def http_module() -> ModuleType:
    """The ``httpx2`` or ``httpx`` module huggingface_hub's own HTTP layer imports."""
    from huggingface_hub.utils import _http

    module = getattr(_http, "httpx2", None) or getattr(_http, "httpx", None)
    if module is None:  # a layout this version does not know: take what is installed
        try:
            import httpx2 as module
        except ImportError:
            import httpx as module
    return module
