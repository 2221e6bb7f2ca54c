"""The HTTP API as the CLI's commands that run against a server see it (`preflight`,
`watches`, `drift`): the server's URL and the API key from `DRIFTGATE_URL` and
`DRIFTGATE_API_KEY` (or flags), the `driftgate-cli/<version>` User-Agent, and one error for
every failure (an unreachable server, an error envelope, an answer that is not JSON) whose
message is one line naming the server without credentials. The key is never printed."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import click

from cli.common import options, pages
from controller import __version__

if TYPE_CHECKING:  # imported when a command calls: `driftgate watches --help` never does
    import httpx

USER_AGENT = f"driftgate-cli/{__version__}"
SERVICE_SOURCE = "driftgate-cli"
TIMEOUT_SECONDS, CONNECT_SECONDS = 30.0, 5.0
_KEY = re.compile(r"[\x21-\x7e]+")  # printable ASCII without spaces: safe in a header

# The two options every command against a server takes.
server_options = options(
    click.option(
        "--url",
        envvar="DRIFTGATE_URL",
        show_envvar=True,
        metavar="URL",
        help="Base URL of the driftgate server.",
    ),
    click.option(
        "--api-key",
        envvar="DRIFTGATE_API_KEY",
        show_envvar=True,
        metavar="KEY",
        help="An org API key (dg_...); prefer the environment variable over the option.",
    ),
)


class ApiError(Exception):
    """A call that did not get the answer it wanted (message for stderr; exit code 2)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def base_url(url: str | None) -> httpx.URL:
    import httpx

    if not url or not url.strip():
        raise ApiError("no server URL: set DRIFTGATE_URL (or pass --url)")
    try:
        base = httpx.URL(url.strip())
    except httpx.InvalidURL as exc:
        raise ApiError(f"DRIFTGATE_URL is not a URL: {exc}") from None
    if base.scheme not in ("http", "https") or not base.host:
        raise ApiError("DRIFTGATE_URL must be an http:// or https:// URL")
    return base


def api_key(key: str | None) -> str:
    value = (key or "").strip()
    if not value:
        raise ApiError("no API key: set DRIFTGATE_API_KEY (or pass --api-key)")
    if not _KEY.fullmatch(value):
        # Never echo it: a header with such a value would fail with the value in the message.
        raise ApiError("DRIFTGATE_API_KEY has spaces or unprintable characters")
    return value


def shown(base: httpx.URL) -> str:
    """The server's URL for messages, without any user:password part."""
    return str(base.copy_with(username=None, password=None))


def client(url: str | None, key: str | None) -> httpx.Client:
    """An HTTP client for the server at `url` with the key `key` (both checked first:
    `ApiError` when either is missing or malformed)."""
    import httpx

    base, secret = base_url(url), api_key(key)
    headers = {
        "Authorization": f"Bearer {secret}",
        "User-Agent": USER_AGENT,
        "X-Service-Source": SERVICE_SOURCE,
        "Accept": "application/json",
    }
    timeout = httpx.Timeout(TIMEOUT_SECONDS, connect=CONNECT_SECONDS)
    return httpx.Client(base_url=base, headers=headers, timeout=timeout)


def send(http: httpx.Client, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
    """Send one request; the status and the JSON answer (None when there is no JSON), or
    `ApiError` for a server that cannot be reached or does not answer in time."""
    import httpx

    where = shown(http.base_url)
    try:
        response = http.request(method, path, **kwargs)
    except httpx.TimeoutException:
        raise ApiError(f"{where} did not answer in time") from None
    except httpx.HTTPError as exc:
        raise ApiError(f"cannot reach {where}: {exc or type(exc).__name__}") from None
    try:
        return response.status_code, response.json() if response.content else None
    except ValueError:
        return response.status_code, None


def refusal(status: int, document: Any, where: str) -> ApiError:
    """The error of an answer that is not the one wanted: the envelope's message and code."""
    if isinstance(document, dict) and isinstance(document.get("message"), str):
        code = document.get("error")
        suffix = f"HTTP {status}" + (f", {code}" if isinstance(code, str) and code else "")
        return ApiError(f"{document['message']} ({suffix})", status)
    return ApiError(f"{where} answered HTTP {status}", status)


def approval_refused(answer: dict[str, Any], flags: tuple[str, str]) -> str:
    """The 403 `approval_refused` of an acknowledgement: each approval rule (and its agent,
    when several agents refused) with the part that failed, and the `flags` (repository,
    branch) that would match the first one."""
    failures = [f for f in answer.get("details") or [] if isinstance(f, dict)]
    several = len({f.get("agentId") for f in failures}) > 1
    told = [
        (f"agent {f.get('agentId')} " if several else "")
        + f"rule {approval_rule(f.get('rule') or {})}: the {f.get('failed', 'rule')} does not match"
        for f in failures
    ]
    hint = ""
    if failures:
        first = failures[0].get("rule") or {}
        branches = [b for b in first.get("branches") or ["*"]]
        branch = next((b for b in branches if not any(c in b for c in "*?[")), None)
        hint = f"; pass {flags[0]} {first.get('repository')} " + (
            f"{flags[1]} {branch}" if branch else f"and a {flags[1]} matching {', '.join(branches)}"
        )
    return f"{answer.get('message')}: {'; '.join(told)}{hint} (HTTP 403, approval_refused)"


def approval_rule(rule: dict[str, Any]) -> str:
    """An approval rule in words: `owner/name on main, release/*`."""
    branches = rule.get("branches") or ["*"]
    return f"{rule.get('repository')} on {', '.join(branches)}"


def call(http: httpx.Client, method: str, path: str, **kwargs: Any) -> Any:
    """The JSON answer of a call that must succeed (2xx), else `ApiError`."""
    status, document = send(http, method, path, **kwargs)
    if 200 <= status < 300:
        return document
    raise refusal(status, document, shown(http.base_url))


def watch_id(http: httpx.Client, ref: str) -> str:
    """The id of the watch `ref` names: its id, its name, or a unique prefix of its id
    (`ambiguous_id`, listing the candidates, when several ids start with it)."""
    from controller.model.ids import pick

    status, document = send(http, "GET", f"/api/watches/{quote(ref, safe='')}")
    if status == 200 and isinstance(document, dict):
        return str(document["id"])
    if status != 404:
        raise refusal(status, document, shown(http.base_url))
    names = watch_names(http)
    found = names.get(ref) or pick("watches", ref, ((i, name) for name, i in names.items()))
    if found is None:
        raise ApiError(f"no watch with id or name {ref!r} in this org (HTTP 404)", 404)
    return found


def drift_event_id(http: httpx.Client, ref: str) -> str:
    """The id of the drift event `ref` names: its id or a unique prefix of it (asked of the
    server with `idPrefix`, in the key's org)."""
    from controller.model.ids import SHOWN_CANDIDATES, ambiguous, is_id_prefix

    if not is_id_prefix(ref):
        return ref  # a whole id, or something the server answers 404 for
    limit = SHOWN_CANDIDATES + 1
    page = call(http, "GET", "/api/drift", params={"idPrefix": ref, "limit": limit})
    events = page.get("events", []) if isinstance(page, dict) else []
    found = [(str(e["id"]), _event_label(e)) for e in events]
    if len(found) > 1:
        raise ambiguous("drift events", ref, found, more=len(found) > SHOWN_CANDIDATES)
    if not found:
        raise ApiError(f"no drift event with id {ref!r} in this org (HTTP 404)", 404)
    return found[0][0]


def _event_label(event: dict[str, Any]) -> str:
    return f"{event.get('watchName') or event.get('watchId')}, {event.get('detectedAt')}"


def by_prefix(http: httpx.Client, path: str, key: str, kind: str, ref: str) -> str:
    """The id a unique prefix `ref` names among the items (`key`) of the listing at `path`;
    `ref` itself when it is not a prefix or nothing starts with it (the server then answers
    for it)."""
    from controller.model.ids import is_id_prefix, pick

    if not is_id_prefix(ref):
        return ref
    listed = call(http, "GET", path)
    items = listed.get(key, []) if isinstance(listed, dict) else []
    return pick(kind, ref, ((str(item["id"]), "") for item in items)) or ref


def watch_names(http: httpx.Client) -> dict[str, str]:
    """Every watch of the org: name → id (all pages)."""
    names: dict[str, str] = {}
    for page in pages(
        lambda cursor: call(
            http,
            "GET",
            "/api/watches",
            params={"limit": 200, **({"cursor": cursor} if cursor else {})},
        )
    ):
        if not isinstance(page, dict) or not isinstance(page.get("watches"), list):
            raise ApiError(f"{shown(http.base_url)} answered without a watch list")
        names.update({str(w["name"]): str(w["id"]) for w in page.get("watches", [])})
    return names
