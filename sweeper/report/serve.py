"""``sweep serve DIR``: the published folder over HTTP on loopback, for a quick look.

Only 127.0.0.1 is bound, so nothing outside this machine can reach it; files are served
read-only from DIR and nothing else.
"""

from __future__ import annotations

import functools
import http.server
from pathlib import Path

from sweeper.settings.errors import UsageError
from sweeper.storage.folder import PAGE, SweepFolder

HOST = "127.0.0.1"


class _Quiet(http.server.SimpleHTTPRequestHandler):
    """Static files from one folder, without a log line per request."""

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass


def make_server(folder: Path, port: int = 0) -> http.server.ThreadingHTTPServer:
    """A server for ``folder`` on 127.0.0.1:``port`` (0: any free port), not yet serving."""
    folder = Path(folder)
    if not folder.is_dir():
        raise UsageError(f"not a folder: {folder}")
    if not SweepFolder(folder).page.is_file():
        raise UsageError(f"no {PAGE} in {folder}: run `sweep publish OUT --to {folder}` (or `sweep report`) first")
    if not 0 <= port <= 65535:
        raise UsageError(f"--port {port}: expected 0-65535")
    handler = functools.partial(_Quiet, directory=str(folder.resolve()))
    try:
        return http.server.ThreadingHTTPServer((HOST, port), handler)
    except OSError as exc:
        raise UsageError(f"cannot listen on {HOST}:{port}: {exc.strerror or exc}") from None


def serve(folder: Path, port: int = 8000) -> None:
    """Serve ``folder`` until interrupted, printing its address first."""
    server = make_server(folder, port)
    host, bound = server.server_address[:2]
    print(f"serving {folder} at http://{host}:{bound}/ (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:  # the usual way to stop it: not an error
        pass
    finally:
        server.server_close()
