"""The extractor on every MCP client format (fixtures written from the formats' documentation,
see ../shared/MCP-CLIENT-CONFIGS.md), on pasted URLs and text; secrets never come back."""

from __future__ import annotations

import json

import pytest

from controller.discovery.extract import (
    REDACTED,
    ConfigInvalid,
    format_of,
    from_mcp_config,
    from_text,
    from_urls,
    infer_watch_type,
)

CLAUDE_DESKTOP = """{
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/docs"],
      "env": {"DEBUG": "1"}
    },
    "pinned": {"command": "npx", "args": ["-y", "@acme/mcp-orders@1.4.2"]}
  }
}"""
CLAUDE_CODE = """{
  // project servers
  "mcpServers": {
    "billing": {
      "type": "http",
      "url": "https://mcp.billing.example/mcp",
      "headers": {"Authorization": "Bearer ${BILLING_TOKEN}", "X-Team": "literal-secret-value"},
    },
    "events": {"type": "sse", "url": "https://events.example/sse"},
  },
}"""
CLAUDE_USER = json.dumps(
    {
        "mcpServers": {"global": {"type": "http", "url": "https://global.example/mcp"}},
        "projects": {
            "/home/me/app": {
                "mcpServers": {"local": {"command": "uvx", "args": ["mcp-server-git"]}}
            }
        },
    }
)
VSCODE = """{
  "inputs": [{"type": "promptString", "id": "tok", "description": "API token", "password": true}],
  "servers": {
    "api": {"type": "http", "url": "https://x.example/mcp",
            "headers": {"Authorization": "Bearer ${input:tok}"}},
    "fs": {"type": "stdio", "command": "npx",
           "args": ["-y", "@modelcontextprotocol/server-filesystem", "${workspaceFolder}"]}
  }
}"""
VSCODE_SETTINGS = """{
  "editor.fontSize": 14,
  "mcp": {"servers": {"legacy": {"type": "sse", "url": "https://legacy.example/sse"}}}
}"""
WINDSURF = """{"mcpServers": {"api": {"serverUrl": "https://w.example/mcp",
  "headers": {"Authorization": "Bearer ${env:TOK}"}},
  "off": {"command": "npx", "args": ["some-server"], "disabled": true}}}"""
CLINE = """{"mcpServers": {"stream": {"type": "streamableHttp", "url": "https://c.example/mcp"},
  "legacy": {"url": "https://c.example/events"}}}"""
ZED = """{
  "theme": "One Dark",
  "context_servers": {
    "fs": {"command": "npx", "args": ["-y", "@zed/fs"], "env": {}},
    "old": {"command": {"path": "uvx", "args": ["mcp-old==2.0"], "env": {"API_KEY": "abc123"}},
            "settings": {}},
    "api": {"url": "https://z.example/mcp"}
  }
}"""
CODEX = """
[mcp_servers.fs]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "/path"]

[mcp_servers.api]
url = "https://codex.example/mcp"
bearer_token_env_var = "API_TOKEN"
"""
GEMINI = """{"mcpServers": {"stream": {"httpUrl": "https://g.example/mcp",
  "headers": {"Authorization": "Bearer $TOK"}},
  "events": {"url": "https://g.example/events"}}}"""
CONTINUE = """
name: my-assistant
mcpServers:
  - name: docs
    command: docker
    args: ["run", "-i", "--rm", "-e", "TOKEN=xyz", "ghcr.io/acme/docs-mcp"]
  - name: remote
    type: streamable-http
    url: https://cont.example/mcp
"""
FRAGMENT = """"orders": {"command": "npx", "args": ["-y", "orders-mcp@latest"]}"""


def by_name(text: str, file_name: str | None) -> dict[str, dict[str, object]]:
    return {
        c.name: {
            "type": c.watch_type,
            "url": c.url,
            "command": c.command,
            "transport": c.transport,
            "floating": c.floating_version,
            "headers": c.headers,
            "env": c.env,
            "disabled": c.disabled,
            "line": c.line,
        }
        for c in from_mcp_config(text, file_name)
    }


def test_claude_desktop_stdio_servers_and_floating_versions() -> None:
    found = by_name(CLAUDE_DESKTOP, "claude_desktop_config.json")
    assert found["filesystem"]["transport"] == "stdio" and found["filesystem"]["floating"] is True
    assert (
        found["filesystem"]["command"]
        == "npx -y @modelcontextprotocol/server-filesystem /Users/me/docs"
    )
    assert found["filesystem"]["env"] == {"DEBUG": REDACTED}
    assert found["pinned"]["floating"] is False and found["filesystem"]["line"] == 3


def test_claude_code_jsonc_with_remote_servers_and_placeholders() -> None:
    found = by_name(CLAUDE_CODE, ".mcp.json")
    assert (found["billing"]["url"], found["billing"]["transport"]) == (
        "https://mcp.billing.example/mcp",
        "http",
    )
    assert found["billing"]["headers"] == {
        "Authorization": "Bearer ${BILLING_TOKEN}",
        "X-Team": REDACTED,
    }
    assert found["events"]["transport"] == "sse"
    user = by_name(CLAUDE_USER, "/home/me/.claude.json")
    assert set(user) == {"global", "local"} and user["local"]["transport"] == "stdio"


@pytest.mark.parametrize(
    ("text", "file_name", "expected"),
    [
        (
            VSCODE,
            ".vscode/mcp.json",
            {"api": ("http", "https://x.example/mcp"), "fs": ("stdio", None)},
        ),
        (
            VSCODE_SETTINGS,
            ".vscode/settings.json",
            {"legacy": ("sse", "https://legacy.example/sse")},
        ),
        (
            WINDSURF,
            "/home/me/.codeium/windsurf/mcp_config.json",
            {"api": ("http", "https://w.example/mcp"), "off": ("stdio", None)},
        ),
        (
            CLINE,
            "cline_mcp_settings.json",
            {
                "stream": ("http", "https://c.example/mcp"),
                "legacy": ("sse", "https://c.example/events"),
            },
        ),
        (
            ZED,
            ".zed/settings.json",
            {
                "fs": ("stdio", None),
                "old": ("stdio", None),
                "api": ("http", "https://z.example/mcp"),
            },
        ),
        (
            CODEX,
            ".codex/config.toml",
            {"fs": ("stdio", None), "api": ("http", "https://codex.example/mcp")},
        ),
        (
            GEMINI,
            ".gemini/settings.json",
            {
                "stream": ("http", "https://g.example/mcp"),
                "events": ("sse", "https://g.example/events"),
            },
        ),
        (
            CONTINUE,
            ".continue/config.yaml",
            {"docs": ("stdio", None), "remote": ("http", "https://cont.example/mcp")},
        ),
    ],
    ids=["vscode", "vscode-settings", "windsurf", "cline", "zed", "codex", "gemini", "continue"],
)
def test_each_client_format(
    text: str, file_name: str, expected: dict[str, tuple[str, str | None]]
) -> None:
    found = by_name(text, file_name)
    assert {name: (c["transport"], c["url"]) for name, c in found.items()} == expected
    assert all(c["type"] == "mcp" for c in found.values())


def test_the_shape_decides_without_a_file_name() -> None:
    assert set(by_name(VSCODE, None)) == {"api", "fs"}
    assert set(by_name(ZED, None)) == {"fs", "old", "api"}
    assert set(by_name("{" + FRAGMENT + "}", None)) == {"orders"}
    assert by_name("{" + FRAGMENT + "}", None)["orders"]["floating"] is True


def test_secrets_are_redacted_and_placeholders_kept() -> None:
    zed = by_name(ZED, ".zed/settings.json")
    assert zed["old"]["env"] == {"API_KEY": REDACTED}
    codex = by_name(CODEX, ".codex/config.toml")
    assert codex["api"]["headers"] == {"Authorization": "Bearer ${env:API_TOKEN}"}
    docs = by_name(CONTINUE, ".continue/config.yaml")["docs"]
    assert "xyz" not in str(docs["command"]) and docs["floating"] is True
    windsurf = by_name(WINDSURF, "windsurf/mcp_config.json")
    assert windsurf["off"]["disabled"] is True
    assert windsurf["api"]["headers"] == {"Authorization": "Bearer ${env:TOK}"}
    vscode = by_name(VSCODE, ".vscode/mcp.json")
    assert vscode["api"]["headers"] == {"Authorization": "Bearer ${input:tok}"}


def test_a_malformed_file_names_the_file_and_line() -> None:
    with pytest.raises(ConfigInvalid) as bad:
        from_mcp_config(
            '{\n  "mcpServers": {\n    "a": {"command": "npx" "args": []}\n  }\n}', ".mcp.json"
        )
    assert bad.value.message.startswith(".mcp.json:3: invalid JSON")
    with pytest.raises(ConfigInvalid, match="config.toml: invalid TOML"):
        from_mcp_config("[mcp_servers.fs\ncommand =", ".codex/config.toml")


def test_urls_and_text() -> None:
    assert infer_watch_type("https://api.example.com/openapi.json")[0] == "openapi"
    assert infer_watch_type("https://api.example.com/v3/api-docs")[0] == "openapi"
    assert infer_watch_type("https://x.example/mcp")[0] == "mcp"
    assert infer_watch_type("https://x.example/v1/charges")[0] == "rest"
    (sse,) = from_urls(["https://x.example/sse"])
    assert (sse.watch_type, sse.transport) == ("mcp", "sse")
    found = from_text(
        "We call https://api.stripe.com/v1/charges and\nhttps://x.example/swagger.json."
    )
    assert [(c.url, c.watch_type, c.line) for c in found] == [
        ("https://api.stripe.com/v1/charges", "rest", 1),
        ("https://x.example/swagger.json", "openapi", 2),
    ]
    assert (
        format_of("C:\\Users\\me\\AppData\\Roaming\\Claude\\claude_desktop_config.json")
        == "claude-desktop"
    )


def test_a_plain_mcp_json_is_read_by_its_shape() -> None:
    from controller.discovery.scan import relevant, scan_file

    servers = {"mcpServers": {"docs": {"url": "https://mcp.example/mcp"}}}
    vscode = {"servers": {"docs": {"type": "http", "url": "https://mcp.example/vs"}}}
    assert [c.url for c in scan_file("mcp.json", json.dumps(servers))] == [
        "https://mcp.example/mcp"
    ]
    assert [c.url for c in scan_file("tools/mcp.json", json.dumps(vscode))] == [
        "https://mcp.example/vs"
    ]
    assert relevant("mcp.json") and format_of("tools/mcp.json") == "mcp-json"
    # Only the whole name: another file ending in it is no configuration.
    assert format_of("my-mcp.json") is None
    assert scan_file("mcp.json", json.dumps({"name": "not servers"})) == []
