"""The card-signature assessor (`controller.checks.verdicts`; registered by the checks as
`controller.diffs.a2a.CARD_SIGNATURE`): each check of an `a2a_card` watch that names trusted
keys verifies the card as its server sent it against them.

The trusted keys are the watch's inline JWKs plus those of its JWKS URL, fetched at each check
through `controller.sources.http` (the same address guard, size cap and deadline as the card),
so a key the operator rotates in or out counts from the next check. A JWKS that cannot be
fetched or read fails the check (the watch is `error`, which blocks the gate): no keys to
verify against is no verdict, never a pass. The verdict holds the status and the key ids, not
the signature bytes, so a card re-signed by the same key is the same snapshot.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from controller.cardtrust.verify import verify_card
from controller.sources.http import FetchError, fetch

if TYPE_CHECKING:
    from controller.settings import Settings

MAX_JWKS_BYTES = 1024 * 1024


def build(settings: Settings, client: Any) -> Callable[[Any, Any], dict[str, Any] | None]:
    """The assessor of one controller: its JWKS fetches share the contracts' client."""

    # `check` is the check's `CheckInput` (typed loosely: the checks import this module
    # through their registry, `controller.checks.assessments`, under the name
    # `controller.diffs.a2a.CARD_SIGNATURE`).
    def assess(check: Any, card: Any) -> dict[str, Any] | None:
        if not check.card_keys:
            return None
        trusted = list(check.card_keys.get("keys") or [])
        url = check.card_keys.get("jwksUrl")
        if url:
            trusted += _jwks_keys(settings, client, url)
        verdict = verify_card(card, trusted)
        return {
            "ok": verdict.is_ok,
            "status": verdict.status,
            "summary": verdict.summary,
            "kids": list(verdict.kids),
        }

    return assess


def _jwks_keys(settings: Settings, client: Any, url: str) -> list[dict[str, Any]]:
    """The keys of the watch's JWKS; a failure is the check's (`FetchError`)."""
    try:
        result = fetch(
            client,
            url,
            max_bytes=min(settings.fetch_max_bytes, MAX_JWKS_BYTES),
            deadline=settings.fetch_deadline_seconds,
        )
    except FetchError as exc:
        message = f"the watch's trusted keys (jwksUrl): {exc.message}"
        raise FetchError(message, exc.failure_class, status=exc.status) from None
    try:
        document = json.loads(result.content)
    except ValueError:
        document = None
    keys = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(keys, list):
        raise FetchError(
            "the watch's trusted keys (jwksUrl) are not a JSON Web Key Set (an object with a "
            "'keys' list)",
            "invalid_contract",
        )
    return [key for key in keys if isinstance(key, dict)]
