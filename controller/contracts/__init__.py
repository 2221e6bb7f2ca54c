"""Contract kinds: what a watch can observe (an OpenAPI document, a REST endpoint's JSON, an MCP
server, an A2A agent card), one registry entry each.

`base.py` is the shape of an entry (`ContractKind`) and the registry (`ContractKinds`);
`kinds.py` defines the kinds and registers them (`CONTRACT_KINDS`). Every list of watch types
(the API's enums, the `.driftgate/` files, the CLI's choices, the tool server's schema,
discovery, the portfolio, the console) and every choice made by type (how a contract is
fetched, read, diffed, listed and recognised) derives from it. Pure, and light to import: the
diff engines are imported by the entries' functions when first called, so `driftgate watches
--help` reads the names without loading them.
"""
