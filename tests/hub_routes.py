"""The read routes of the loopback Hub: listing, repo info, file resolve (with LFS path).

Answers follow the Hub's shapes closely enough for ``huggingface_hub`` to parse them:
listing pages linked by ``Link: <...>; rel="next"``, errors as ``X-Error-Code`` headers,
file metadata as ``ETag`` / ``X-Repo-Commit`` (plus ``X-Linked-Etag`` / ``X-Linked-Size``
and a redirect for large files, like the Hub's LFS files).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from hub_server import _REPO, _TYPE_PREFIX, LFS_SUFFIXES, Repo, Request, sha256_hex

if TYPE_CHECKING:
    from hub_server import HubServer

_KIND = {None: "model", "datasets": "dataset", "spaces": "space"}


def add_read_routes(server: HubServer) -> None:
    """Register listing, info and resolve routes on ``server``."""
    server.route("GET", r"/api/models")(lambda req, m: _list_models(server, req))
    info = rf"/api/(?P<kind>models|datasets|spaces)/{_REPO}(?:/revision/(?P<rev>[^/]+))?"
    server.route("GET", info)(lambda req, m: _repo_info(server, req, m))
    resolve = rf"/{_TYPE_PREFIX}{_REPO}/resolve/(?P<rev>[^/]+)/(?P<path>.+)"
    for method in ("HEAD", "GET"):
        server.route(method, resolve)(lambda req, m: _resolve(server, req, m))
        server.route(method, r"/_lfs/(?P<oid>[0-9a-f]{64})")(lambda req, m: _lfs_object(server, req, m))


def _list_models(server: HubServer, req: Request) -> None:
    """Models by downloads (descending), ``limit`` per page at most ``page_size``."""
    models = [r for (kind, _), r in server.repos.items() if kind == "model"]
    if (req.query.get("sort") or ["downloads"])[0] == "downloads":
        models.sort(key=lambda r: -r.downloads)
    limit = int((req.query.get("limit") or [len(models)])[0])
    offset = int((req.query.get("offset") or [0])[0])
    # ``limit`` caps the whole listing; pages hold at most ``page_size`` of it.
    end = min(limit, len(models), offset + server.page_size)
    page = models[offset:end]
    headers: dict[str, str] = {}
    if end < min(limit, len(models)):
        query = [(k, v) for k, values in req.query.items() if k != "offset" for v in values]
        next_url = f"{req.base_url}/api/models?{urlencode(query + [('offset', str(end))])}"
        headers["Link"] = f'<{next_url}>; rel="next"'
    req.send_json([r.info(full=False) for r in page], headers=headers)


def _find(server: HubServer, req: Request, m: re.Match[str], kind: str) -> Repo | None:
    """The repo named in the path, or ``None`` after answering 404 RepoNotFound."""
    repo = server.get_repo(kind, m["repo"])
    if repo is None:
        req.error(404, "RepoNotFound", f"Repository not found: {m['repo']}")
    return repo


def _revision_ok(req: Request, repo: Repo, rev: str | None) -> bool:
    """Only the branch ``main`` and the repo's commit exist; else 404 RevisionNotFound."""
    if rev in (None, "main", repo.sha):
        return True
    req.error(404, "RevisionNotFound", f"Invalid rev id: {rev}")
    return False


def _repo_info(server: HubServer, req: Request, m: re.Match[str]) -> None:
    kind = {"models": "model", "datasets": "dataset", "spaces": "space"}[m["kind"]]
    repo = _find(server, req, m, kind)
    if repo is not None and _revision_ok(req, repo, m["rev"]):
        blobs = (req.query.get("blobs") or ["false"])[0].lower() in ("1", "true")
        req.send_json(repo.info(full=True, blobs=blobs))


def _gate(req: Request, repo: Repo) -> bool:
    """Whether the request may read a gated repo's files; answers 401/403 if not."""
    if not repo.gated or (req.token is not None and req.token in repo.granted):
        return True
    # The Hub: 401 without a token, 403 with a token lacking access; both say GatedRepo.
    status = 401 if req.token is None else 403
    req.error(status, "GatedRepo", f"Access to model {repo.repo_id} is restricted. You must have access to it.")
    return False


def _resolve(server: HubServer, req: Request, m: re.Match[str]) -> None:
    repo = _find(server, req, m, _KIND[m["kind"]])
    if repo is None or not _revision_ok(req, repo, m["rev"]) or not _gate(req, repo):
        return
    data = repo.files.get(m["path"])
    if data is None:
        req.error(404, "EntryNotFound", f"{m['path']} does not exist on {m['rev']}")
        return
    headers = {"X-Repo-Commit": repo.sha, "Accept-Ranges": "bytes"}
    if m["path"].endswith(LFS_SUFFIXES):
        oid = sha256_hex(data)
        headers.update({
            "X-Linked-Etag": f'"{oid}"', "X-Linked-Size": str(len(data)),
            "Location": f"{req.base_url}/_lfs/{oid}", "ETag": f'"{oid}"',
        })
        req.send(302, b"", headers)
        return
    headers["ETag"] = f'"{sha256_hex(data)[:40]}"'
    _send_bytes(req, data, headers)


def _lfs_object(server: HubServer, req: Request, m: re.Match[str]) -> None:
    """Large-file bytes by sha256, standing in for the Hub's CDN."""
    for repo in server.repos.values():
        for data in repo.files.values():
            if sha256_hex(data) == m["oid"]:
                # Same-host redirects are followed, so the commit must be on this answer.
                headers = {"ETag": f'"{m["oid"]}"', "X-Repo-Commit": repo.sha, "Accept-Ranges": "bytes"}
                _send_bytes(req, data, headers)
                return
    if m["oid"] in server.lfs_objects:
        _send_bytes(req, server.lfs_objects[m["oid"]], {"ETag": f'"{m["oid"]}"'})
        return
    req.error(404, "EntryNotFound", f"no object {m['oid']}")


def _send_bytes(req: Request, data: bytes, headers: dict[str, str]) -> None:
    """Send file bytes, honouring a single ``Range: bytes=a-b`` (resumed downloads)."""
    match = re.fullmatch(r"bytes=(\d+)-(\d*)", req.headers.get("Range") or "")
    if match:
        start = int(match[1])
        end = int(match[2]) if match[2] else len(data) - 1
        headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
        req.send(206, data[start : end + 1], {"Content-Type": "application/octet-stream", **headers})
        return
    req.send(200, data, {"Content-Type": "application/octet-stream", **headers})
