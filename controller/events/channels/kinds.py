"""The settings and secrets that org destinations of several channels share: no settings, and
one secret URL (a Discord or Teams webhook's URL is its credential, like Slack's)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import Field, StringConstraints

from controller.model.base import RequestModel
from controller.model.watch import HttpUrl

# A token as the services print them: visible ASCII, no spaces.
Token = Annotated[str, StringConstraints(min_length=1, max_length=512, pattern=r"^[\x21-\x7e]+$")]


class NoSettings(RequestModel):
    """A channel with nothing to set but its secrets."""


class SecretUrl(RequestModel):
    url: HttpUrl = Field(description="the webhook URL (it is the credential: stored encrypted)")


def secret_url(config: Mapping[str, Any]) -> str:
    """The address of a destination whose URL is its secret."""
    return str(config["url"])
