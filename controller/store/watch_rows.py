"""A watch row's own parts: its request headers (stored encrypted, names kept in clear) and
its tags (ordered rows). Used by the services that write watches, by reconcile, and by the
check that sends the headers."""

from __future__ import annotations

from controller.crypto import SecretBox
from controller.store.models import Watch, WatchTag


def decrypted_headers(watch: Watch, box: SecretBox) -> dict[str, str]:
    if watch.headers_ciphertext is None:
        return {}
    headers = box.decrypt_json(watch.headers_ciphertext)
    return {str(k): str(v) for k, v in headers.items()}


def set_headers(watch: Watch, headers: dict[str, str] | None, box: SecretBox) -> None:
    if not headers:
        watch.headers_ciphertext = None
        watch.header_names = []
        return
    watch.headers_ciphertext = box.encrypt_json(headers)
    watch.header_names = sorted(headers)


def set_contract(watch: Watch, url: str, watch_type: str) -> None:
    """Point a watch at a contract. Another URL or another type is another reading of what
    is fetched: the validators and the hash of the last body (which let a check skip the
    parse) are forgotten, so the next check fetches and parses in full."""
    if watch.url is not None and (watch.url != url or watch.watch_type != watch_type):
        watch.etag = None
        watch.last_modified = None
        watch.source_hash = None
    watch.url = url
    watch.watch_type = watch_type


def set_tags(watch: Watch, tags: list[str]) -> None:
    current = {row.tag: row for row in watch.tag_rows}
    rows = []
    for position, tag in enumerate(tags):
        row = current.get(tag) or WatchTag(tag=tag)
        row.position = position
        rows.append(row)
    watch.tag_rows = rows
