"""Line numbers of JSON pointers (controller/diffs/positions.py), checked against PyYAML's
composer, which keeps the position of every node (too slow to run on every diff: 5 to 8 s
on a 4 MB spec, where the index reads only what it is asked for).

The promise: an exact answer is the node's own line; a node the text cannot be followed to
is answered with the line of an ancestor, marked not exact. Never a wrong line.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.diffs.core import escape_pointer
from controller.diffs.positions import LineIndex, Position

BENCH = Path(__file__).resolve().parents[3] / "shared" / "bench" / "openapi"


def node_lines(text: str) -> dict[str, int]:
    """Every pointer of a YAML or JSON text and its line (a key's line for a member)."""
    found = {"": 1}

    def walk(node: yaml.Node, pointer: str) -> None:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                child = f"{pointer}/{escape_pointer(str(key.value))}"
                found[child] = key.start_mark.line + 1
                walk(value, child)
        elif isinstance(node, yaml.SequenceNode):
            for i, value in enumerate(node.value):
                child = f"{pointer}/{i}"
                found[child] = value.start_mark.line + 1
                walk(value, child)

    root = yaml.compose(text, Loader=yaml.CSafeLoader)
    found[""] = root.start_mark.line + 1
    walk(root, "")
    return found


def check(text: str, pointers: list[str] | None = None) -> tuple[int, int]:
    """Every pointer's answer is its line, or (not exact) an ancestor's; the exact and the
    approximate answers counted."""
    truth = node_lines(text)
    index = LineIndex(text)
    exact = approximate = 0
    for pointer in pointers if pointers is not None else list(truth):
        found = index.locate(pointer)
        assert found is not None, pointer
        if found.exact:
            assert found.line == truth[pointer], (pointer, found, truth[pointer])
            exact += 1
        else:
            ancestors = {truth[p] for p in truth if pointer.startswith(p + "/") or p == ""}
            assert found.line in ancestors, (pointer, found)
            approximate += 1
    return exact, approximate


# What YAML may hold as text (its printable set), and what trips up a line scanner.
printable = st.characters(
    codec="utf-8", exclude_categories=("Cs", "Cc"), exclude_characters="\ufeff\ufffe\uffff"
)
keys = st.text(printable | st.sampled_from(":#-~/ '\"&*!|>{}[],"), min_size=0, max_size=40)
scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(printable | st.sampled_from("\n:#- "), max_size=30)
)
documents = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=25,
).filter(lambda d: isinstance(d, dict | list))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents, st.sampled_from(["yaml", "yaml-narrow", "json", "json-flat"]))
def test_every_node_of_generated_documents(document: Any, style: str) -> None:
    if style == "yaml":
        text = yaml.safe_dump(document, allow_unicode=True, sort_keys=False)
    elif style == "yaml-narrow":  # long scalars folded over several lines
        text = yaml.safe_dump(document, allow_unicode=True, sort_keys=False, width=20, indent=4)
    elif style == "json":
        text = json.dumps(document, indent=2, ensure_ascii=False)
    else:
        text = json.dumps(document, ensure_ascii=False)
    exact, _ = check(text)
    assert exact >= 1


YAML = """\
%YAML 1.2
---
# a comment: with a colon
openapi: 3.0.3
info: {title: flow, version: "1"}   # a flow mapping: not followed inside
paths:
  /a:
    get:
      description: |
        key: value inside a block scalar
        - not an item
      parameters:
      - name: compact
        in: query
      -   name: spaced
          in: header
      - $ref: '#/components/parameters/Shared'
      responses:
        '200':
          description: ok
        "2\\u00301":
          description: a quoted key with an escape
    post: &anchored
      summary: x
    put: *anchored
components:
  parameters:
    Shared:
      name: shared
      in: query
  schemas:
    Base: &base
      type: object
    Merged:
      <<: *base
      title: merged
"""


def test_hand_written_yaml_with_the_awkward_parts() -> None:
    index = LineIndex(YAML)

    def line(pointer: str) -> tuple[int, bool]:
        found = index.locate(pointer)
        assert found is not None
        return found.line, found.exact

    truth = node_lines(YAML)
    assert line("/paths/~1a/get/description") == (truth["/paths/~1a/get/description"], True)
    assert line("/paths/~1a/get/parameters/0/in") == (truth["/paths/~1a/get/parameters/0/in"], True)
    assert line("/paths/~1a/get/parameters/1/in") == (truth["/paths/~1a/get/parameters/1/in"], True)
    assert line("/paths/~1a/get/responses/201") == (truth["/paths/~1a/get/responses/201"], True)
    # Through a $ref: the referenced parameter's own line.
    shared = truth["/components/parameters/Shared/in"]
    assert line("/paths/~1a/get/parameters/2/in") == (shared, True)
    # A flow mapping, an alias and a merge key are not followed: their key's line.
    assert line("/info/title") == (truth["/info"], False)
    assert line("/paths/~1a/put/summary") == (truth["/paths/~1a/put"], False)
    assert line("/components/schemas/Merged/type") == (truth["/components/schemas/Merged"], False)
    # Gone from the document: the nearest parent.
    assert line("/paths/~1a/delete") == (truth["/paths/~1a"], False)
    check(YAML)


def test_json_strings_with_brackets_escapes_and_repeated_keys() -> None:
    text = (
        '{"a": {"s": "x\\"}{[,", "t": [1, {"u": "]"}]},\n'
        ' "b": 1,\n "b": {"c": 2},\n "d\\u002fe": {"$ref": "#/a/t/1"}}'
    )
    index = LineIndex(text)
    assert index.locate("/a/t/1/u") == Position(1, True)
    assert index.locate("/b/c") == Position(3, True)  # the last "b" wins, as in json.loads
    assert index.locate("/d~1e/u") == Position(1, True)  # through the $ref
    assert index.locate("/d~1e/v") == Position(1, False)
    check(text)


@pytest.mark.parametrize("style", ["json", "yaml"])
def test_mcp_tools_are_found_by_name(style: str) -> None:
    """driftgate's pointers into MCP snapshots name tools (`/tools/search/...`)."""
    snapshot = {
        "tools": [
            {"name": "fetch", "inputSchema": {"type": "object"}},
            {"name": "search", "inputSchema": {"properties": {"q": {"type": "string"}}}},
        ]
    }
    text = json.dumps(snapshot, indent=2) if style == "json" else yaml.safe_dump(snapshot)
    truth = node_lines(text)
    index = LineIndex(text)
    found = index.locate("/tools/search/inputSchema/properties/q")
    assert found == Position(truth["/tools/1/inputSchema/properties/q"], True)
    assert index.locate("/tools/gone") == Position(truth["/tools"], False)


def test_text_that_cannot_be_followed_is_never_an_error() -> None:
    assert LineIndex('{"a": ').locate("/a") is None  # broken JSON: no line at all
    assert LineIndex("just a scalar").locate("/a") == Position(1, False)
    assert LineIndex("").locate("/a") is None


@pytest.mark.skipif(not BENCH.is_dir(), reason=f"{BENCH} (the big real pairs) is absent")
@pytest.mark.parametrize("name", ["stripe-2023-09-12.yaml", "github-2022-07-18.json"])
def test_real_specs_sampled(name: str) -> None:
    """2,000 random nodes of a 4 MB real spec: every line right, every node found."""
    text = (BENCH / name).read_text(encoding="utf-8")
    truth = node_lines(text)
    sample = random.Random(32).sample(sorted(truth), 2000)
    exact, approximate = check(text, sample)
    assert (exact, approximate) == (2000, 0)
