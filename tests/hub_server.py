"""A Hub-compatible HTTP server on loopback, for testing the Hub client without network.

``HubServer`` serves the routes ``huggingface_hub`` and ``transformers`` use to list
models, read model info and download files (see shared/notes/hub.md), from repos the
test adds in memory. Routes live in a table (``server.route(method, pattern)``), so more
can be added without touching the handler. ``hub_routes.py`` holds the read routes,
``hub_upload.py`` the write routes (repo create, preupload, LFS, commit) that
``datasets.Dataset.push_to_hub`` and ``HfApi.upload_file`` need.

The ``hub_server`` fixture in ``hub_fixtures.py`` starts one per test and points the
client at it.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from hub_faults import FaultPlan

Handler = Callable[["Request", "re.Match[str]"], None]
# Files served through the large-file (LFS) path: a redirect plus X-Linked-* headers.
LFS_SUFFIXES = (".safetensors", ".bin", ".parquet", ".pt", ".h5")
_REPO = r"(?P<repo>[^/]+(?:/[^/]+)?)"
_TYPE_PREFIX = r"(?:(?P<kind>datasets|spaces)/)?"


@dataclass
class Repo:
    """One repo the server holds: its files at a single commit, and listing metadata."""

    repo_id: str
    files: dict[str, bytes] = field(default_factory=dict)
    repo_type: str = "model"
    downloads: int = 0
    likes: int = 0
    pipeline_tag: str | None = None
    library_name: str | None = None
    tags: list[str] = field(default_factory=list)
    # "auto"/"manual" like the Hub; a gated repo's files need one of ``granted`` tokens.
    gated: str | bool = False
    granted: set[str] = field(default_factory=set)
    sha: str = ""
    # Sizes the Hub reports for files, over their real length (a 70 GB shard served as a
    # few bytes), and the Hub's safetensors summary; by default read from the files.
    declared_sizes: dict[str, int] = field(default_factory=dict)
    safetensors: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if not self.sha:
            self.recompute_sha()

    def recompute_sha(self) -> None:
        """A commit id that changes whenever the files change."""
        digest = hashlib.sha1(self.repo_id.encode())
        for name in sorted(self.files):
            digest.update(name.encode() + b"\0" + hashlib.sha256(self.files[name]).digest())
        self.sha = digest.hexdigest()

    def config(self) -> dict[str, Any] | None:
        """The listing's ``config`` field (model_type, architectures) from config.json."""
        raw = self.files.get("config.json")
        if raw is None:
            return None
        data = json.loads(raw)
        return {k: data[k] for k in ("model_type", "architectures", "auto_map") if k in data}

    def info(self, *, full: bool, blobs: bool = False) -> dict[str, Any]:
        """The JSON the Hub answers for this repo (``full`` adds siblings, ``blobs`` sizes)."""
        out: dict[str, Any] = {
            "_id": self.sha[:24], "id": self.repo_id, "author": self.repo_id.partition("/")[0] or None,
            "sha": self.sha, "downloads": self.downloads, "likes": self.likes,
            "pipeline_tag": self.pipeline_tag, "library_name": self.library_name, "tags": list(self.tags),
            "private": False, "gated": self.gated, "disabled": False,
            "createdAt": "2024-01-01T00:00:00.000Z", "lastModified": "2024-01-01T00:00:00.000Z",
        }
        config = self.config()
        if config is not None:
            out["config"] = config
        if full:
            out["siblings"] = [self._sibling(name, blobs=blobs) for name in sorted(self.files)]
            summary = self.safetensors if self.safetensors is not None else safetensors_summary(self.files)
            if summary is not None:
                out["safetensors"] = summary
        return out

    def _sibling(self, name: str, *, blobs: bool) -> dict[str, Any]:
        if not blobs:
            return {"rfilename": name}
        data = self.files[name]
        size = self.declared_sizes.get(name, len(data))
        out: dict[str, Any] = {"rfilename": name, "size": size, "blobId": hashlib.sha1(data).hexdigest()}
        if name.endswith(LFS_SUFFIXES):
            out["lfs"] = {"size": size, "sha256": sha256_hex(data), "pointerSize": 134}
        return out


class Request:
    """What a route handler sees: the parsed request and helpers to answer it."""

    def __init__(self, handler: BaseHTTPRequestHandler, server: HubServer) -> None:
        self.handler = handler
        self.server = server
        self.method = handler.command
        parts = urlsplit(handler.path)
        self.path = parts.path
        self.query = parse_qs(parts.query)
        self.headers = handler.headers
        self.body = _read_body(handler)

    @property
    def base_url(self) -> str:
        return f"http://{self.headers.get('Host') or self.server.host_port}"

    @property
    def token(self) -> str | None:
        auth = self.headers.get("Authorization") or ""
        return auth[len("Bearer "):] if auth.startswith("Bearer ") else None

    def json_body(self) -> Any:
        return json.loads(self.body or b"null")

    def send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        """Answer; every answer carries Content-Length so keep-alive stays in step."""
        self.handler.send_response(status)
        for key, value in (headers or {}).items():
            self.handler.send_header(key, value)
        self.handler.send_header("Content-Length", str(len(body)))
        self.handler.end_headers()
        if self.method != "HEAD":
            self.handler.wfile.write(body)

    def send_json(self, data: Any, status: int = 200, headers: dict[str, str] | None = None) -> None:
        self.send(status, json.dumps(data).encode(), {"Content-Type": "application/json", **(headers or {})})

    def error(self, status: int, code: str, message: str, headers: dict[str, str] | None = None) -> None:
        """An error the way the Hub sends it: X-Error-Code/X-Error-Message and a JSON body."""
        headers = {"X-Error-Code": code, "X-Error-Message": message, **(headers or {})}
        self.send_json({"error": message}, status=status, headers=headers)


class HubServer:
    """A threaded HTTP server on 127.0.0.1 (port chosen by the OS) serving fake repos."""

    def __init__(self, *, page_size: int = 50) -> None:
        self.page_size = page_size
        self.repos: dict[tuple[str, str], Repo] = {}
        self.routes: list[tuple[str, re.Pattern[str], Handler]] = []
        self.log: list[tuple[str, str, int]] = []  # (method, path, status) per request
        self.auth_seen: list[str] = []  # Authorization headers received, to check tokens are sent
        self.lfs_objects: dict[str, bytes] = {}  # uploaded large files by sha256, until committed
        self.lock = threading.Lock()
        self.faults = FaultPlan()  # misbehaviour applied before the routes (hub_faults.py)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        from hub_routes import add_read_routes
        from hub_upload import add_upload_routes

        add_read_routes(self)
        add_upload_routes(self)

    def route(self, method: str, pattern: str) -> Callable[[Handler], Handler]:
        """Decorator adding a handler for ``method`` and a full-path regex."""

        def wrap(func: Handler) -> Handler:
            self.routes.append((method, re.compile(pattern), func))
            return func

        return wrap

    def add_repo(self, repo_id: str, files: dict[str, bytes] | None = None, **meta: Any) -> Repo:
        """Add (or replace) a repo; ``meta`` sets Repo fields (downloads, gated, ...)."""
        repo = Repo(repo_id=repo_id, files=dict(files or {}), **meta)
        self.repos[(repo.repo_type, repo_id)] = repo
        return repo

    def add_folder(self, repo_id: str, folder: Path, **meta: Any) -> Repo:
        """Add a repo holding every file under ``folder`` (e.g. a ``save_pretrained`` dir)."""
        files = {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
        return self.add_repo(repo_id, files, **meta)

    def get_repo(self, repo_type: str, repo_id: str) -> Repo | None:
        return self.repos.get((repo_type, unquote(repo_id)))

    @property
    def host_port(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def url(self) -> str:
        """The endpoint to put in HF_ENDPOINT."""
        return f"http://{self.host_port}"

    def start(self) -> HubServer:
        """Listen on a free loopback port in a daemon thread."""
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), name="hub-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> HubServer:  # noqa: PYI034 - Self needs Python 3.11
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def dispatch(self, request: Request) -> None:
        """Run the first route matching method and path; 404 otherwise."""
        if auth := request.headers.get("Authorization"):
            self.auth_seen.append(auth)
        for method, pattern, func in self.routes:
            if method == request.method and (match := pattern.fullmatch(unquote(request.path))):
                func(request, match)
                return
        request.error(404, "NotFound", f"no route for {request.method} {request.path}")


def _read_body(handler: BaseHTTPRequestHandler) -> bytes:
    """The request body, sized by Content-Length or sent chunked (file uploads are)."""
    if "chunked" in (handler.headers.get("Transfer-Encoding") or "").lower():
        parts = []
        while size := int(handler.rfile.readline().split(b";")[0].strip() or b"0", 16):
            parts.append(handler.rfile.read(size))
            handler.rfile.readline()  # the CRLF after each chunk
        while handler.rfile.readline().strip():
            pass  # trailers, up to the blank line
        return b"".join(parts)
    length = int(handler.headers.get("Content-Length") or 0)
    return handler.rfile.read(length) if length else b""


def _make_handler(server: HubServer) -> type[BaseHTTPRequestHandler]:
    class _Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _any(self) -> None:
            request = Request(self, server)
            try:
                if not server.faults.apply(request):
                    server.dispatch(request)
            except Exception as exc:  # noqa: BLE001 - a bug in a route must show up as a 500, not a hang
                request.error(500, "ServerError", f"{type(exc).__name__}: {exc}")

        do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = _any

        def send_response(self, code: int, message: str | None = None) -> None:
            with server.lock:
                server.log.append((self.command, self.path, code))
            super().send_response(code, message)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # quiet: the test output is for the tests

    return _Handler


def safetensors_summary(files: dict[str, bytes]) -> dict[str, Any] | None:
    """The Hub's ``safetensors`` field: parameters per dtype over the repo's .safetensors."""
    counts: dict[str, int] = {}
    for name, data in files.items():
        if not name.endswith(".safetensors") or len(data) < 8:
            continue
        length = int.from_bytes(data[:8], "little")
        try:
            header = json.loads(data[8 : 8 + length])
        except ValueError:
            continue  # a placeholder, not a real safetensors file
        for key, tensor in header.items():
            if key != "__metadata__":
                count = 1
                for dim in tensor["shape"]:
                    count *= dim
                counts[tensor["dtype"]] = counts.get(tensor["dtype"], 0) + count
    return {"parameters": counts, "total": sum(counts.values())} if counts else None


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
