"""Split watch-set files: `.driftgate/watch-sets/*.yaml`, each like watch-sets.yaml, all of
them one namespace of watch sets and watches."""

from __future__ import annotations

from textwrap import dedent

from controller.gitsources.load import is_read, load_bundle
from controller.model.gitops import InlineWatch, Unreadable

TEMPLATES = """\
version: 1
templates:
  - name: stripe
    watchType: openapi
    urlPattern: https://stripe.example.com/openapi.json
"""

MAIN = """\
version: 1
watchSets:
  - name: production
    watches:
      - name: stripe-api
        template: stripe
"""

PAYMENTS = """\
version: 1
watchSets:
  - name: payments
    environment: production
    watches:
      - name: adyen
        url: https://adyen.example.com/openapi.json
        watchType: openapi
      - name: paypal
        url: https://paypal.example.com/openapi.json
        watchType: openapi
"""

TOOLS = """\
version: 1
watchSets:
  - name: tools
    watches:
      - name: github-mcp
        url: https://mcp.example.com/mcp
        watchType: mcp
  - name: search
    watches:
      - name: search-mcp
        template: stripe
"""

AGENTS = """\
version: 1
agents:
  - id: billing
    watches: [stripe-api, adyen, github-mcp]
"""


def files(**texts: str) -> dict[str, bytes]:
    return {name: dedent(text).encode() for name, text in texts.items()}


def rendered(texts: dict[str, bytes]) -> list[str]:
    return [str(problem) for problem in load_bundle(texts).problems]


def test_every_file_adds_its_sets_in_file_order() -> None:
    bundle = load_bundle(
        {
            **files(**{"watch-sets.yaml": MAIN, "templates.yaml": TEMPLATES}),
            **files(**{"agents.yaml": AGENTS}),
            "watch-sets/tools.yml": TOOLS.encode(),
            "watch-sets/payments.yaml": PAYMENTS.encode(),
        }
    )
    assert bundle.problems == []
    assert list(bundle.watch_set_files) == [
        "watch-sets.yaml",
        "watch-sets/payments.yaml",
        "watch-sets/tools.yml",
    ]
    assert bundle.watch_sets is not None
    assert [s.name for s in bundle.watch_sets.watch_sets] == [
        "production",
        "payments",
        "tools",
        "search",
    ]
    # A template of templates.yaml serves an entry of a split file.
    search = bundle.watch_set_files["watch-sets/tools.yml"].watch_sets[1].watches[0]
    assert search.template == "stripe"
    # Positions are kept per file.
    assert bundle.locate("watch-sets/payments.yaml", ("watchSets", 0, "watches", 1)) == (9, 9)
    assert bundle.locate(".driftgate/watch-sets/tools.yml", ("watchSets", 1, "name")) == (8, 11)
    assert bundle.locate("watch-sets.yaml", ("watchSets", 0, "name")) == (3, 11)


def test_split_files_alone_are_enough() -> None:
    bundle = load_bundle({"watch-sets/payments.yaml": PAYMENTS.encode()})
    assert bundle.problems == []
    assert bundle.watch_sets is not None and len(bundle.watch_sets.watch_sets[0].watches) == 2


def test_a_watch_declared_in_two_files_names_both_places() -> None:
    again = PAYMENTS.replace("name: payments", "name: payments-eu").replace(
        "name: paypal", "name: klarna"
    )
    found = rendered({"watch-sets/a.yaml": PAYMENTS.encode(), "watch-sets/b.yaml": again.encode()})
    assert found == [
        ".driftgate/watch-sets/b.yaml:6:15: duplicate watch 'adyen' "
        "(first at .driftgate/watch-sets/a.yaml:6)"
    ]


def test_a_set_name_repeated_across_files_and_with_watch_sets_yaml() -> None:
    copy = PAYMENTS.replace("name: adyen", "name: adyen-2").replace("name: paypal", "name: pp-2")
    clash = MAIN.replace("name: stripe-api", "name: stripe-2").replace("production", "payments")
    found = rendered(
        {
            **files(**{"templates.yaml": TEMPLATES, "watch-sets.yaml": clash}),
            "watch-sets/a.yaml": PAYMENTS.encode(),
            "watch-sets/b.yaml": copy.encode(),
        }
    )
    assert found == [
        ".driftgate/watch-sets/a.yaml:3:11: duplicate watch set 'payments' "
        "(first at .driftgate/watch-sets.yaml:3)",
        ".driftgate/watch-sets/b.yaml:3:11: duplicate watch set 'payments' "
        "(first at .driftgate/watch-sets.yaml:3)",
    ]


def test_a_repeat_within_one_split_file_says_the_line() -> None:
    twice = PAYMENTS.replace("name: paypal", "name: adyen")
    assert rendered({"watch-sets/a.yaml": twice.encode()}) == [
        ".driftgate/watch-sets/a.yaml:9:15: duplicate watch 'adyen' (first at line 6)"
    ]


def test_problems_of_a_split_file_are_at_its_own_lines() -> None:
    broken = PAYMENTS.replace(
        "watchType: openapi\n      - name: paypal", "watchType: soap\n      - name: paypal"
    )
    found = rendered(
        {
            "watch-sets/good.yaml": TOOLS.replace(
                "template: stripe", "url: https://s.example.com/mcp\n        watchType: mcp"
            ).encode(),
            "watch-sets/bad.yaml": broken.encode(),
            "watch-sets/worse.yaml": b"version: 2\nwatchSets: []\n",
        }
    )
    assert len(found) == 2
    assert found[0].startswith(".driftgate/watch-sets/bad.yaml:8:20: watchType must be one of")
    assert found[1].startswith(".driftgate/watch-sets/worse.yaml:1:10: unsupported version 2")


def test_an_inline_watch_that_contradicts_a_split_file_names_it() -> None:
    agents = """\
    version: 1
    agents:
      - id: billing
        watches:
          - {name: adyen, url: "https://elsewhere.example.com/openapi.json", type: openapi}
    """
    found = rendered({**files(**{"agents.yaml": agents}), "watch-sets/p.yaml": PAYMENTS.encode()})
    assert found == [
        ".driftgate/agents.yaml:5:16: watch 'adyen' is declared with another URL or type in "
        "watch-sets/p.yaml (line 6); refer to it by name"
    ]


def test_which_names_are_read() -> None:
    assert all(map(is_read, ("watch-sets/a.yaml", "watch-sets/b.YML", "watch-sets.yaml")))
    assert not any(
        map(is_read, ("watch-sets/a.json", "watch-sets/x/a.yaml", "watch-sets/README.md"))
    )


def test_a_split_file_that_could_not_be_read_is_a_problem_and_never_absent() -> None:
    bundle = load_bundle(
        {"watch-sets/a.yaml": PAYMENTS.encode()},
        unreadable={"watch-sets/b.yaml": Unreadable("too_large", 2_000_000, 1_048_576)},
    )
    assert [str(problem) for problem in bundle.problems] == [
        ".driftgate/watch-sets/b.yaml:1:1: the file has 2,000,000 bytes (1.9 MiB), more than "
        "the limit of 1 MiB per file (git_max_file_bytes); driftgate did not read it (split it, "
        "or raise the limit)"
    ]
    assert list(bundle.watch_set_files) == ["watch-sets/a.yaml"]
    not_a_directory = load_bundle({}, unreadable={"watch-sets": Unreadable("file")})
    assert [p.file for p in not_a_directory.problems] == [".driftgate/watch-sets"]


def test_bytes_over_the_limit_of_a_split_file_are_not_parsed() -> None:
    bundle = load_bundle(
        {"watch-sets/a.yaml": PAYMENTS.encode() + b"#" * 2048}, max_file_bytes=1024
    )
    assert [p.file for p in bundle.problems] == [".driftgate/watch-sets/a.yaml"]
    assert "driftgate did not read it" in bundle.problems[0].message


def test_checked_split_files_give_the_same_models() -> None:
    texts = {
        **files(**{"templates.yaml": TEMPLATES, "agents.yaml": AGENTS}),
        "watch-sets/payments.yaml": PAYMENTS.encode(),
        "watch-sets/tools.yaml": TOOLS.encode(),
    }
    full = load_bundle(texts)
    assert full.problems == [] and set(full.data) >= {"watch-sets/payments.yaml"}
    again = load_bundle(texts, checked=full.data)
    assert again.checked == frozenset(texts)
    assert again.watch_set_files == full.watch_set_files and again.watch_sets == full.watch_sets
    inline = [w for a in (again.agents.agents if again.agents else []) for w in a.watches]
    assert not any(isinstance(w, InlineWatch) for w in inline)
