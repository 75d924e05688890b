"""The Hub listing as a stream that survives interruption.

``list_pages`` follows the Hub's ``Link: <...>; rel="next"`` pages one at a time (the next
URL carries the Hub's cursor). ``ListingJournal`` writes each page's rows to a partial
snapshot as they arrive, then the cursor of the page after it; a rerun the same day with
the same query reads the rows back and carries on from that cursor instead of listing the
first 50,000 models again. A finished listing becomes the day's snapshot.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sweeper.sources.snapshots import install_snapshot


@dataclass(frozen=True)
class Page:
    """One page of the listing and the URL of the next (``None`` on the last page)."""

    items: list[dict[str, Any]]
    next_url: str | None


def list_pages(url: str, params: dict[str, Any] | None, *, timeout: float | None = None) -> Iterator[Page]:
    """Pages from ``url`` (with ``params`` on the first request only: next links carry them)."""
    from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status

    headers = build_hf_headers()
    query = params
    next_url: str | None = url
    while next_url is not None:
        response = get_session().get(next_url, params=query, headers=headers, timeout=timeout)
        hf_raise_for_status(response)
        items = response.json()
        if not isinstance(items, list):
            raise ValueError(f"a listing page is a JSON list, got {type(items).__name__}")
        next_url = response.links.get("next", {}).get("url")
        query = None
        yield Page(items, next_url)


class ListingJournal:
    """The rows listed so far and the cursor to continue from, for one day and one query."""

    def __init__(self, folder: Path, query_key: str, *, day: dt.date | None = None) -> None:
        self.folder = folder
        self.day = day or dt.datetime.now(dt.timezone.utc).date()
        digest = hashlib.sha256(query_key.encode()).hexdigest()[:12]
        self.stem = f".hub-{self.day.isoformat()}-{digest}"
        self.rows_path = folder / f"{self.stem}.partial.jsonl"
        self.cursor_path = folder / f"{self.stem}.cursor.json"
        self.count = 0

    def resume(self) -> tuple[list[dict[str, Any]], str | None]:
        """Rows and next URL of an interrupted listing (``[], None`` when there is none).

        Only rows the cursor vouches for are kept: a page written after the last cursor
        update is listed again, never twice.
        """
        self._forget_other_days()
        try:
            cursor = json.loads(self.cursor_path.read_text(encoding="utf-8"))
            count, next_url = int(cursor["rows"]), cursor.get("next")
            with self.rows_path.open(encoding="utf-8") as handle:
                rows = [json.loads(line) for line, _ in zip(handle, range(count))]
        except (OSError, ValueError, KeyError, TypeError):
            self.discard()
            return [], None
        if len(rows) != count or not isinstance(next_url, str):
            self.discard()
            return [], None
        self._rewrite(rows)
        self.count = count
        return rows, next_url

    def append(self, rows: list[dict[str, Any]], next_url: str | None) -> None:
        """Add a page's rows, then move the cursor past them (rows first: see ``resume``)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        with self.rows_path.open("a", encoding="utf-8") as handle:
            handle.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
            handle.flush()
            os.fsync(handle.fileno())
        self.count += len(rows)
        _write_atomic(self.cursor_path, json.dumps({"rows": self.count, "next": next_url}))

    def finish(self) -> Path:
        """The listing is complete: it becomes the day's snapshot; returns its path."""
        self.cursor_path.unlink(missing_ok=True)
        if not self.rows_path.exists():
            self.rows_path.touch()
        return install_snapshot(self.rows_path, self.count, day=self.day, directory=self.folder)

    def discard(self) -> None:
        """Forget the partial listing (a stale cursor, a torn file)."""
        self.cursor_path.unlink(missing_ok=True)
        self.rows_path.unlink(missing_ok=True)

    def _rewrite(self, rows: list[dict[str, Any]]) -> None:
        tmp = self.rows_path.with_name(self.rows_path.name + ".tmp")
        tmp.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
        tmp.replace(self.rows_path)

    def _forget_other_days(self) -> None:
        """Partial listings of earlier days: their cursors have expired on the Hub."""
        if not self.folder.is_dir():
            return
        for path in self.folder.glob(".hub-*.partial.jsonl"):
            if not path.name.startswith(f".hub-{self.day.isoformat()}-"):
                path.unlink(missing_ok=True)
                path.with_name(path.name.replace(".partial.jsonl", ".cursor.json")).unlink(missing_ok=True)


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
