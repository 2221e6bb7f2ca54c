"""The watch type of a URL, from what it serves: one guarded GET when the URL does not tell.

`POST /api/watches` without `watchType` first asks the URL (`controller.model.watch.
infer_watch_type`); when that is ambiguous (`https://example.com/petstore.json`), the service
fetches the document once, through the same guarded client as every check (address guard,
credentials bound to their origin, size cap, timeouts), and reads it the way `driftgate diff`
does, by the contract kinds' shapes (`controller.contracts`): an OpenAPI or Swagger document
is `openapi`, an A2A agent card (a `skills` list beside the card's own fields) is `a2a_card`,
other JSON is `rest`. A server-sent event stream is an MCP server on the SSE transport.
Anything else cannot be told apart, and the caller is asked for `watchType`.
"""

from __future__ import annotations

from collections.abc import Mapping

from controller.contracts.base import HTTP_DOCUMENT
from controller.contracts.kinds import CONTRACT_KINDS
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
    told = CONTRACT_KINDS.served_as(content_type)
    if told is not None:
        return WatchType(told.name)
    try:
        # No file name: a `.json` URL may still serve YAML.
        document = load_document(result.content, None, kind="json")
    except Exception:  # noqa: BLE001 - not JSON or YAML: the content tells nothing
        return None
    # Only a kind read from one document over HTTP can be what a URL serves as a document.
    shaped = CONTRACT_KINDS.detect(document, fetch=HTTP_DOCUMENT)
    if shaped is not None:
        return WatchType(shaped.name)
    if (
        content_type.endswith("json")
        or content_type.endswith("+json")
        or (isinstance(document, dict | list) and result.content.lstrip()[:1] in (b"{", b"["))
    ):
        return WatchType(CONTRACT_KINDS.catch_all.name)
    return None


def _content_type(headers: Mapping[str, str]) -> str:
    for name, value in headers.items():
        if name.lower() == "content-type":
            return value.split(";", 1)[0].strip().lower()
    return ""
