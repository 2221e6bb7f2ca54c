"""Who is calling: the principal an API key or a trial session resolves to
(`controller.orgs.auth_service`), which every use case is given."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Principal:
    """Who is calling: an org reached through an API key or a trial session."""

    org_id: str
    org_name: str
    plan: str
    products: frozenset[str]
    kind: str  # "api_key" or "trial"
    credential_id: str
    touch: bool = False  # the key's last use is older than LAST_USED_RESOLUTION

    @property
    def actor(self) -> str:
        return f"{self.kind}:{self.credential_id}"
