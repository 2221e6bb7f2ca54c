"""The hosted clients' names of driftgate's headers, and the hosted routes refused by design.

Pure: headers in, a value out.
"""

from __future__ import annotations

from typing import Protocol

# The specification's request headers and the hosted clients' names of the same thing.
HEADER_ALIASES: dict[str, str] = {
    "X-Service-Source": "X-DriftGuard-Source",
    "X-Service-Trial": "X-DriftGuard-Trial",
}

# The hosted product's names of driftgate's overlay products (its SKUs), read wherever a
# product is named: `PUT /api/org/products/<product>`, `driftgate orgs enable-product`.
PRODUCT_ALIASES: dict[str, str] = {
    "mockdrift_cloud": "replay_cloud",
    "schemasync_repo": "draftpr_repo",
}


def product_name(name: str) -> str:
    """driftgate's name of the product `name` (the specification's, or a hosted SKU's)."""
    return PRODUCT_ALIASES.get(name, name)


# Hosted routes a self-hosted driftgate refuses by design (501 `not_self_hosted`), with why and
# what to do instead; docs/compat.md and docs/decisions.md carry the same reasons.
HOSTED_ONLY: dict[str, str] = {
    "/v1/fuseguard/devices/enroll": (
        "device enrolment mints per-device credentials in the hosted control plane; a "
        "self-hosted fleet gives each guard an API key (`driftgate keys create`), which "
        "fuseguard sends when it has no device credential"
    ),
    "/v1/fuseguard/devices/heartbeat": (
        "heartbeats feed the hosted fleet console (device kill switch, policy CDN, trace "
        "requests); in driftgate an agent is stopped with `POST /api/agents/<id>/kill`, which "
        "the guard's preflight already obeys (409)"
    ),
    "/v1/fuseguard/devices/trace": (
        "trace uploads answer a trace request sent with a heartbeat, which driftgate never "
        "sends; trips reach driftgate through `POST /v1/fuse/trips` and the events batch"
    ),
    "/v1/fuseguard/policy/bundle": (
        "the policy bundle is the hosted product's device policy language; driftgate's "
        "policies live in git (`.driftgate/agents.yaml`) and act through preflight; keep a "
        "bundle file beside the guard (`FUSEGUARD_POLICY_PATH`)"
    ),
    "/api/usage/events": (
        "usage events meter the hosted product's billing; driftgate bills nothing. mockdrift "
        "ignores the answer; `MOCKDRIFT_TELEMETRY=0` stops the call"
    ),
}


class Headers(Protocol):
    """Request headers, looked up case-insensitively (werkzeug's, or a dict in tests)."""

    def get(self, key: str, /) -> str | None: ...


def header(headers: Headers, name: str) -> str | None:
    """The value of the specification's header `name`, else of its hosted alias."""
    value = headers.get(name)
    if value is None and name in HEADER_ALIASES:
        value = headers.get(HEADER_ALIASES[name])
    return value
