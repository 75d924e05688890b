"""Upload routes for the loopback Hub: repo create, tree, preupload and commit.

Enough of the Hub's write API for ``HfApi.create_commit`` / ``upload_file`` and
``datasets.Dataset.push_to_hub``: small text files travel base64-encoded inside the
commit ("regular"), large or binary ones through the LFS batch API and a basic PUT
(the fixture turns Xet off, as for a Hub without Xet storage). Commits apply to the repo
in memory and give it a new commit id.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import re
from typing import TYPE_CHECKING, Any

from hub_server import _REPO, _TYPE_PREFIX, LFS_SUFFIXES, Repo, Request, sha256_hex

if TYPE_CHECKING:
    from hub_server import HubServer

_KINDS = {"models": "model", "datasets": "dataset", "spaces": "space"}
_API = rf"/api/(?P<kind>models|datasets|spaces)/{_REPO}"


def add_upload_routes(server: HubServer) -> None:
    """Register the write routes (and the tree listing uploads consult) on ``server``."""
    server.route("POST", r"/api/repos/create")(lambda req, m: _create_repo(server, req))
    # Dataset cards are validated before upload; every card is fine here.
    server.route("POST", r"/api/validate-yaml")(lambda req, m: req.send_json({"errors": [], "warnings": []}))
    server.route("POST", rf"{_API}/preupload/(?P<rev>[^/]+)")(lambda req, m: _preupload(server, req, m))
    server.route("POST", rf"{_API}/commit/(?P<rev>[^/]+)")(lambda req, m: _commit(server, req, m))
    server.route("POST", rf"{_API}/paths-info/(?P<rev>[^/]+)")(lambda req, m: _paths_info(server, req, m))
    server.route("GET", rf"{_API}/tree/(?P<rev>[^/]+)(?:/(?P<path>.*))?")(lambda req, m: _tree(server, req, m))
    lfs_batch = rf"/{_TYPE_PREFIX}{_REPO}\.git/info/lfs/objects/batch"
    server.route("POST", lfs_batch)(lambda req, m: _lfs_batch(server, req))
    server.route("PUT", r"/_lfs_upload/(?P<oid>[0-9a-f]{64})")(lambda req, m: _lfs_put(server, req, m))


def _repo(server: HubServer, req: Request, m: re.Match[str]) -> Repo | None:
    repo = server.get_repo(_KINDS[m["kind"]], m["repo"])
    if repo is None:
        req.error(404, "RepoNotFound", f"Repository not found: {m['repo']}")
    return repo


def _create_repo(server: HubServer, req: Request) -> None:
    body: dict[str, Any] = req.json_body() or {}
    name = body.get("name", "")
    repo_id = f"{body['organization']}/{name}" if body.get("organization") else name
    kind = body.get("type") or "model"
    prefix = "" if kind == "model" else f"{kind}s/"
    url = f"{req.base_url}/{prefix}{repo_id}"
    if server.get_repo(kind, repo_id) is not None:
        req.send_json({"error": "You already created this repo", "url": url}, status=409)
        return
    server.add_repo(repo_id, {}, repo_type=kind)
    req.send_json({"url": url, "name": repo_id, "id": repo_id})


def _preupload(server: HubServer, req: Request, m: re.Match[str]) -> None:
    if _repo(server, req, m) is None:
        return
    files = (req.json_body() or {}).get("files", [])
    answer = [{"path": f["path"], "uploadMode": _upload_mode(f), "shouldIgnore": False} for f in files]
    req.send_json({"files": answer, "commitOid": None})


def _upload_mode(file: dict[str, Any]) -> str:
    """Like the Hub: large or binary files go to LFS storage, small text files in git."""
    sample = base64.b64decode(file.get("sample") or "")
    binary = b"\0" in sample
    lfs = file["path"].endswith(LFS_SUFFIXES) or binary or int(file.get("size") or 0) > 10_000_000
    return "lfs" if lfs else "regular"


def _lfs_batch(server: HubServer, req: Request) -> None:
    """The LFS batch API: where to PUT each object not stored yet (basic transfer)."""
    objects = []
    for obj in (req.json_body() or {}).get("objects", []):
        entry: dict[str, Any] = {"oid": obj["oid"], "size": obj["size"], "authenticated": True}
        if obj["oid"] not in server.lfs_objects:
            entry["actions"] = {"upload": {"href": f"{req.base_url}/_lfs_upload/{obj['oid']}", "header": {}}}
        objects.append(entry)
    req.send(200, json.dumps({"transfer": "basic", "objects": objects}).encode(),
             {"Content-Type": "application/vnd.git-lfs+json"})


def _lfs_put(server: HubServer, req: Request, m: re.Match[str]) -> None:
    if sha256_hex(req.body) != m["oid"]:
        req.error(400, "BadRequest", "uploaded bytes do not match the object id")
        return
    server.lfs_objects[m["oid"]] = req.body
    req.send(200)


def _commit_lines(req: Request) -> list[dict[str, Any]]:
    body = req.body
    if req.headers.get("Content-Encoding") == "gzip":
        body = gzip.decompress(body)
    return [json.loads(line) for line in body.splitlines() if line.strip()]


def _commit(server: HubServer, req: Request, m: re.Match[str]) -> None:
    repo = _repo(server, req, m)
    if repo is None:
        return
    for line in _commit_lines(req):
        key, value = line.get("key"), line.get("value") or {}
        if key == "file":
            repo.files[value["path"]] = base64.b64decode(value["content"]) if value.get("encoding") == "base64" \
                else str(value["content"]).encode()
        elif key == "deletedFile":
            repo.files.pop(value["path"], None)
        elif key == "deletedFolder":
            folder = value["path"].rstrip("/") + "/"
            repo.files = {p: d for p, d in repo.files.items() if not p.startswith(folder)}
        elif key == "lfsFile":
            if value["oid"] not in server.lfs_objects:
                req.error(400, "BadRequest", f"LFS object {value['oid']} was never uploaded")
                return
            repo.files[value["path"]] = server.lfs_objects[value["oid"]]
    repo.recompute_sha()
    prefix = "" if repo.repo_type == "model" else f"{repo.repo_type}s/"
    commit_url = f"{req.base_url}/{prefix}{repo.repo_id}/commit/{repo.sha}"
    req.send_json({"commitUrl": commit_url, "commitOid": repo.sha, "pullRequestUrl": None, "success": True})


def _entry(path: str, data: bytes) -> dict[str, Any]:
    return {"type": "file", "path": path, "size": len(data), "oid": hashlib.sha1(data).hexdigest()}


def _tree(server: HubServer, req: Request, m: re.Match[str]) -> None:
    """Files under ``path`` (recursive) plus the folders directly under it."""
    repo = _repo(server, req, m)
    if repo is None:
        return
    base = (m["path"] or "").strip("/")
    prefix = f"{base}/" if base else ""
    recursive = (req.query.get("recursive") or ["false"])[0].lower() in ("1", "true")
    entries: list[dict[str, Any]] = []
    folders: set[str] = set()
    for path in sorted(repo.files):
        if not path.startswith(prefix):
            continue
        rest = path[len(prefix):]
        if "/" in rest and not recursive:
            folders.add(prefix + rest.split("/", 1)[0])
            continue
        entries.append(_entry(path, repo.files[path]))
    if recursive:
        for path in repo.files:
            if path.startswith(prefix):
                parts = path[len(prefix):].split("/")[:-1]
                folders.update(prefix + "/".join(parts[: i + 1]) for i in range(len(parts)))
    entries += [{"type": "directory", "path": f, "oid": "0" * 40} for f in sorted(folders)]
    if base and not entries:  # like the Hub: a folder that does not exist is an error
        req.error(404, "EntryNotFound", f"{base} does not exist on {m['rev']}")
        return
    req.send_json(entries)


def _paths_info(server: HubServer, req: Request, m: re.Match[str]) -> None:
    repo = _repo(server, req, m)
    if repo is None:
        return
    paths = parse_form_or_json(req).get("paths", [])
    req.send_json([_entry(p, repo.files[p]) for p in paths if p in repo.files])


def parse_form_or_json(req: Request) -> dict[str, Any]:
    """paths-info posts a form (``paths=a&paths=b``) or JSON, by client version."""
    if "json" in (req.headers.get("Content-Type") or ""):
        return req.json_body() or {}
    from urllib.parse import parse_qs

    return {k: v for k, v in parse_qs(req.body.decode()).items()}
