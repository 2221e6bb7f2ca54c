"""The watch type of a URL, from what it serves: one guarded GET when the URL does not tell.

`POST /api/watches` without `watchType` first asks the URL (`controller.model.watch.
infer_watch_type`); when that is ambiguous (`https://example.com/petstore.json`), the service
fetches the document once, through the same guarded client as every check (address guard,
credentials bound to their origin, size cap, timeouts), and reads it the way `driftgate diff`
does: an OpenAPI or Swagger document is `openapi`, an A2A agent card (a `skills` list beside
the card's own fields) is `a2a_card`, other JSON is `rest`. A server-sent event
stream is an MCP server on the SSE transport. Anything else cannot be told apart, and the
caller is asked for `watchType`.
"""

from __future__ import annotations

from collections.abc import Mapping

from controller.diffs.a2a import looks_like_agent_card
from controller.diffs.loader import load_document
from controller.model.watch import WatchType
from controller.sources.http import HttpClient, fetch, make_timeout

SNIFF_MAX_BYTES = 5 * 1024 * 1024
SNIFF_TIMEOUT = make_timeout(connect=5.0, read=10.0)
SNIFF_DEADLINE = 15.0  # seconds for the whole fetch: it holds a request of the API


def sniff_watch_type(
    client: HttpClient, url: str, headers: Mapping[str, str] | None = None
) -> WatchType | None:
    """The type the document at `url` shows, or None when it shows none. A failed fetch
    raises `FetchError` (its message names the URL without its query)."""
    result = fetch(client, url, headers=headers, max_bytes=SNIFF_MAX_BYTES, deadline=SNIFF_DEADLINE)
    content_type = _content_type(result.headers)
    if content_type == "text/event-stream":
        return WatchType.MCP
    try:
        # No file name: a `.json` URL may still serve YAML.
        document = load_document(result.content, None, kind="json")
    except Exception:  # noqa: BLE001 - not JSON or YAML: the content tells nothing
        return None
    if isinstance(document, dict) and ("openapi" in document or "swagger" in document):
        return WatchType.OPENAPI
    if looks_like_agent_card(document):
        return WatchType.A2A_CARD
    if content_type.endswith("json") or content_type.endswith("+json"):
        return WatchType.REST
    if isinstance(document, dict | list) and result.content.lstrip()[:1] in (b"{", b"["):
        return WatchType.REST
    return None


def _content_type(headers: Mapping[str, str]) -> str:
    for name, value in headers.items():
        if name.lower() == "content-type":
            return value.split(";", 1)[0].strip().lower()
    return ""
