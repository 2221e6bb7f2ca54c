"""Regenerate docs/openapi.json, the API's published description, from the routes:
`python -m tests.gen_openapi_doc` (`make generate`). tests/web/test_openapi_document.py fails
while the committed copy differs from what `/openapi.json` serves, so a change to the API's
description is always a visible change in review, and a refactoring shows it changed nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

OPENAPI_DOC = Path(__file__).resolve().parents[1] / "docs" / "openapi.json"


def document() -> dict[str, Any]:
    """The document as served without a public base URL (`servers: [{"url": "/"}]`)."""
    from controller.settings import Settings
    from web.api import REGISTRY

    return REGISTRY.openapi(Settings(public_base_url=None))


def render(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


def main() -> None:
    OPENAPI_DOC.write_text(render(document()), encoding="utf-8")
    print(f"wrote {OPENAPI_DOC}")


if __name__ == "__main__":
    main()
