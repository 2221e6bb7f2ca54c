"""`.driftgate/coverage.yaml`: the local (stdio) MCP servers a repository runs unwatched on
purpose (`controller.discovery.acknowledgements` reads and writes the file; the configuration
schema renders this model). Pure."""

from __future__ import annotations

from typing import Annotated, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

ACK_FILES = (".driftgate/coverage.yaml", ".driftgate/coverage.yml")
ACK_FILE = ACK_FILES[0]
VERSION = 1
MAX_ACKNOWLEDGEMENTS = 1000
_TEXT = r"^[^\x00-\x08\x0b-\x1f\x7f]*$"


class LocalServer(Protocol):
    """What an acknowledgement is matched against (a scanned candidate)."""

    transport: str | None
    command: str | None


class Acknowledgement(BaseModel):
    """One local (stdio) server run unwatched on purpose."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=_TEXT)] = Field(
        description="the server's name in the MCP client configuration"
    )
    command: Annotated[str, StringConstraints(min_length=1, max_length=4000, pattern=_TEXT)] = (
        Field(
            description="its command line as `driftgate scan` shows it (secrets redacted); "
            "the acknowledgement holds for this command line only"
        )
    )
    reason: Annotated[str, StringConstraints(max_length=2000, pattern=_TEXT)] | None = Field(
        default=None, description="why it may run unwatched"
    )

    def covers(self, candidate: LocalServer) -> bool:
        """Whether this acknowledges `candidate`: a stdio server with the same command line."""
        return (
            candidate.transport == "stdio"
            and candidate.command is not None
            and _normal(candidate.command) == _normal(self.command)
        )


class CoverageFile(BaseModel):
    """`.driftgate/coverage.yaml`: the local (stdio) MCP servers the coverage gate accepts
    unwatched."""

    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = Field(description="file format version")
    acknowledged: list[Acknowledgement] = Field(
        default_factory=list, max_length=MAX_ACKNOWLEDGEMENTS
    )


def _normal(command: str) -> str:
    return " ".join(command.split()).lower()
