"""The one exception the diff engines raise: a contract document that cannot be read.

A contract *break* is data (a `Change`); a contract that cannot be parsed, is not the expected
kind of document, or has dangling references is an input error the caller reports (CLI exit 2,
`check_failed:invalid_contract` for a watch).
"""

from __future__ import annotations


class ContractParseError(ValueError):
    """A contract document is not valid YAML/JSON, not the expected kind, or inconsistent.

    `where` names the place (a file name, a JSON pointer or `line:column`) when known.
    """

    def __init__(self, message: str, *, where: str | None = None) -> None:
        self.message = message
        self.where = where
        super().__init__(f"{where}: {message}" if where else message)
