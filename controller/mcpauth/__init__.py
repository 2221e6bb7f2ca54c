"""OAuth 2.1 for remote MCP watches: the MCP authorization spec's client side.

A remote MCP server behind OAuth answers 401 with `WWW-Authenticate: Bearer
resource_metadata="..."`; its protected-resource metadata (RFC 9728) names the authorization
servers, whose metadata (RFC 8414, or OpenID discovery) names the token endpoint, where a
watch's client credentials (or its refresh token) buy an access token for the server
(`resource`, RFC 8707). The token is sent as `Authorization: Bearer` to the MCP server's
origin only, cached encrypted on the watch with its expiry, and bought again when it is about
to expire or the server refuses it mid-way.

`metadata` and `grants` are pure (what the documents say, what to ask for, whether a cached
token still serves); `client` does the HTTP exchanges over `controller.sources.http`, so the
address guard applies to every metadata and token request; `rows` reads and writes the
watch's columns (settings in clear, secrets and the token through the `SecretBox`).
"""
