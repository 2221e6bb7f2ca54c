"""`.driftgate/` values the fetcher cannot send are file:line problems, never a crash and
never a watch whose every check fails; messages never show a header value."""

from __future__ import annotations

from textwrap import dedent

from controller.gitsources.load import load_bundle


def problems(**files: str) -> list[str]:
    bundle = load_bundle(
        {name.replace("_", "-") + ".yaml": dedent(text).encode() for name, text in files.items()}
    )
    return [str(problem) for problem in bundle.problems]


def test_watch_sets_refuse_unsendable_hosts_and_header_values() -> None:
    found = problems(
        watch_sets=f"""\
        version: 1
        watchSets:
          - name: prod
            watches:
              - name: octal
                url: http://0177.0.0.1/openapi.json
                watchType: openapi
              - name: range
                url: http://999.1.1.1/openapi.json
                watchType: openapi
              - name: idna
                url: https://xn--zz.com/openapi.json
                watchType: openapi
              - name: label
                url: https://{"a" * 64}.example.com/openapi.json
                watchType: openapi
              - name: value
                url: https://api.example.com/openapi.json
                watchType: openapi
                headers:
                  X-Note: "café"
                  Stripe-Version: "2024-06-20 "
              - name: fine
                url: https://api.example.com/openapi.json
                watchType: openapi
                headers:
                  Stripe-Version: "2024-06-20"
        """
    )
    assert found == [
        ".driftgate/watch-sets.yaml:6:14: url: host '0177.0.0.1' is not a canonical IPv4 "
        "address: write four decimal numbers 0-255 without leading zeros",
        ".driftgate/watch-sets.yaml:9:14: url: host '999.1.1.1' is not a canonical IPv4 "
        "address: write four decimal numbers 0-255 without leading zeros",
        ".driftgate/watch-sets.yaml:12:14: url: host label 'xn--zz' is not a valid punycode "
        "A-label (IDNA 2008)",
        ".driftgate/watch-sets.yaml:15:14: url: host label "
        f"'{'a' * 57}...' is longer than 63 characters",
        ".driftgate/watch-sets.yaml:21:19: header X-Note: the value must be ASCII (a "
        "character outside ASCII cannot be sent)",
        ".driftgate/watch-sets.yaml:22:27: header Stripe-Version: the value must not start "
        "or end with a space or tab",
    ]
    assert not any("café" in line for line in found)


def test_templates_and_agents_refuse_them_too() -> None:
    found = problems(
        templates="""\
        version: 1
        templates:
          - name: placeholder
            watchType: openapi
            urlPattern: https://{host}/openapi.json
          - name: bad
            watchType: openapi
            urlPattern: https://1.2.3/{path}
        """,
        agents="""\
        version: 1
        agents:
          - id: bot
            runtime_webhook: https://api..example.com/hook
            watches:
              - {name: inline, url: "http://0x7f.1/openapi.json", type: openapi}
        """,
    )
    assert found == [
        ".driftgate/agents.yaml:4:22: runtime_webhook: the host has an empty label (two dots "
        "in a row, or a leading dot)",
        ".driftgate/agents.yaml:6:29: url: host '0x7f.1' is not a canonical IPv4 address: "
        "write four decimal numbers 0-255 without leading zeros",
        ".driftgate/templates.yaml:8:17: urlPattern: host '1.2.3' is not a canonical IPv4 "
        "address: write four decimal numbers 0-255 without leading zeros",
    ]


def test_text_no_store_can_hold_is_a_problem_at_its_line() -> None:
    # YAML's "\0" is a NUL character: SQLite would keep it and Postgres refuse it, so both
    # refuse it here, at the file and line, before anything is applied.
    found = problems(
        watch_sets="""\
        version: 1
        watchSets:
          - name: prod
            description: "before\\0after"
        """,
        dashboards="""\
        version: 1
        dashboards:
          - name: Billing
            description: "a\\0b"
            panels: [health]
        """,
        agents="""\
        version: 1
        agents:
          - id: bot
            repoRef: "acme/bot@ma\\0in"
            approvals:
              - repository: acme/bot
                branches: ["ma\\0in"]
        """,
    )
    assert found == [
        ".driftgate/agents.yaml:4:14: repoRef must look like owner/repo@branch",
        ".driftgate/agents.yaml:7:20: branches[0] must not be empty or contain control characters",
        ".driftgate/dashboards.yaml:4:18: description must not contain NUL or other control "
        "characters (tabs and line breaks are fine)",
        ".driftgate/watch-sets.yaml:4:18: description must not contain NUL or other control "
        "characters (tabs and line breaks are fine)",
    ]


def test_a_profile_file_with_nul_is_a_problem_at_its_file() -> None:
    from controller.gitsources.load import load_bundle

    bundle = load_bundle(
        {"profiles/order.json": b'{"id": "order", "version": 1, "schema": {"title": "a\\u0000"}}'}
    )
    assert [str(problem) for problem in bundle.problems] == [
        ".driftgate/profiles/order.json:1:31: the profile does not match its schema: "
        "/schema/title: strings must not contain NUL characters"
    ]
