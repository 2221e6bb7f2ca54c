"""Pure diff engines: normalise, diff and classify contracts (OpenAPI, JSON Schema, MCP, A2A
agent cards, JSON).

Nothing here does I/O: callers read files and URLs and pass text or parsed documents in.
"""

from controller.diffs.a2a import diff_agent_card, load_agent_card, normalize_agent_card
from controller.diffs.canonical import canonical_json, canonicalize, fingerprint
from controller.diffs.core import max_severity
from controller.diffs.errors import ContractParseError
from controller.diffs.explain import explain_changes
from controller.diffs.infer import diff_json_samples, infer_schema
from controller.diffs.jsonschema import Finding, SchemaDiffer
from controller.diffs.jsonschema import diff_schemas as diff_schema_findings
from controller.diffs.loader import load_document
from controller.diffs.mcp import diff_mcp, normalize_mcp_snapshot
from controller.diffs.openapi import DiffOptions, diff_openapi
from controller.diffs.overrides import RulesFile, RulesFileError, apply_rules_file
from controller.diffs.rules import CATALOG, Direction
from controller.diffs.schema import diff_schemas

__all__ = [
    "CATALOG",
    "ContractParseError",
    "DiffOptions",
    "Direction",
    "Finding",
    "RulesFile",
    "RulesFileError",
    "SchemaDiffer",
    "apply_rules_file",
    "canonical_json",
    "canonicalize",
    "diff_agent_card",
    "diff_json_samples",
    "diff_mcp",
    "diff_openapi",
    "diff_schema_findings",
    "diff_schemas",
    "explain_changes",
    "fingerprint",
    "infer_schema",
    "load_agent_card",
    "load_document",
    "max_severity",
    "normalize_agent_card",
    "normalize_mcp_snapshot",
]
