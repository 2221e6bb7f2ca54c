"""The watch type of a new watch when the caller does not send it: from the URL when it tells
(`controller.model.watch.infer_watch_type`); for a JSON document whose name does not tell
(`https://example.com/petstore.json`), from what it serves, fetched once through the guarded
client (`controller.sources.sniff`). Other URLs (`/v1/charges`) are never fetched on create:
the caller is asked for `watchType`. Documented in docs/api.md."""

from __future__ import annotations

from urllib.parse import urlsplit

from controller.contracts.kinds import CONTRACT_KINDS
from controller.errors import Unprocessable
from controller.model.watch import WatchCreate, infer_watch_type
from controller.settings import Settings
from controller.sources.http import FetchError, configured_client
from controller.sources.sniff import SNIFF_TIMEOUT, sniff_watch_type


def with_watch_type(data: WatchCreate, settings: Settings) -> WatchCreate:
    """`data` with its `watchType` set, or 422 naming why it cannot be told."""
    if data.watch_type is not None or infer_watch_type(data.url) is not None:
        return data
    if not urlsplit(data.url).path.lower().endswith(".json"):
        raise Unprocessable(
            f"cannot infer watchType from the URL; send watchType ({CONTRACT_KINDS.listed()})",
            details=[{"path": "/watchType", "message": "required when the URL does not tell"}],
        )
    with configured_client(settings, timeout=SNIFF_TIMEOUT) as client:
        try:
            found = sniff_watch_type(client, data.url, data.headers)
        except FetchError as exc:
            raise _unknown(f"fetching it to find out failed: {exc.message}") from None
    if found is None:
        raise _unknown("what it serves is not JSON")
    return data.model_copy(update={"watch_type": found})


def _unknown(why: str) -> Unprocessable:
    return Unprocessable(
        f"cannot infer watchType from the URL, and {why}; "
        f"send watchType ({CONTRACT_KINDS.listed()})",
        details=[{"path": "/watchType", "message": "required when the URL does not tell"}],
    )
