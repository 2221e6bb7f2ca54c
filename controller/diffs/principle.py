# ruff: noqa: E501 (a markdown table: one row a line)
"""The principle every schema verdict follows, with a real example per case (issue 41): the
opening section of docs/rules.md; and the spellings it is applied across, stated again before
the reasons. Text only; the rules themselves live in `rules.py`, and
`tests/diffs/test_vendor_patterns.py`, `test_value_sets.py` and `test_certain_refusals.py`
hold each case below as a test."""

from __future__ import annotations

PRINCIPLE_MARKDOWN = """\
## The principle: direction by the set of values

A schema is a set of values. Who is hurt by a change depends on which side of the wire the
schema describes:

- **Request** (what a client sends): breaking when the new contract refuses a value the old
  one accepted. A larger set is safe.
- **Response** (what a client reads): breaking when the new contract allows a value that
  could not be produced before and that a reader written against the old contract trips on.
  A smaller set (a narrowing) is safe.

The same set of values written another way is no break on either side. Each case below
names a real vendor's published history (`../shared/conformance/vendors`) where driftgate
met it; `tests/diffs/test_vendor_patterns.py` holds each as a test.

| case | request | response | real example |
|---|---|---|---|
| nullability in any spelling (3.0 `nullable`, 3.1 `type: [.., 'null']`, `oneOf`/`anyOf` with a null member): null added | info | breaking (`became-nullable`) | Resend v2 -> v3, Intercom |
| the same, null dropped (`oneOf [{type: 'null'}, {$ref: X}]` -> `$ref: X`) | breaking | info, and what changed underneath is still compared | Slack, Intercom |
| an enum written as `oneOf`/`anyOf` of titled `const`s: one normal form, the verdict of the plain `enum` | value removed: breaking | value added: warning | Box, Twilio |
| `allOf` parts merged, split or wrapped around a `$ref`, inline schemas moved into named components, extensions beside a one-part `allOf` | as merged | as merged | Intercom `POST /tags`, SendGrid `POST /senders`, Okta `AuthenticatorSimple` |
| a `type` written out where the properties, alternatives or values implied it (`type-made-explicit`), or dropped where they still do (`type-left-implied`) | info | info | Box `AiAskAgent`, Linode `GET /vpcs/ips` |
| a schema written as alternatives (`oneOf`/`anyOf`, or shared properties beside them), or folded back from them | safe when one alternative takes every old value (with `oneOf`, only one) | safe when every alternative is an old value; else the breaking findings of the alternatives that break, each once | Slack `objs_user`, Okta JWKs |
| keywords beside a `$ref` in OpenAPI 3.0 / Swagger 2.0 (ignored by the specification) | no change | no change | Xero `Quote.Contact` |
| a schema on a `204` / `304` answer, an empty placeholder body (`{type: object, properties: {}}`, `{type: 'null'}`) dropped or swapped | - | no change / warning | SendGrid |
| a success status removed where every success status left was documented before, or carries no body like it | - | warning (`-covered`) | Okta `201`, Spotify `200` -> `204` |
| ranges that do not meet (`minimum: 1` -> `exclusiveMaximum: 1`; `maxLength: 5` -> `minLength: 10`) | breaking (`range-disjoint`) | breaking | (held-out suites) |
| a new bound or a changed pattern that refuses a value the schema names itself (enum, const, default, example) | breaking (`known-value-refused`) | info | Spotify `limit` (default 20, maximum 50 -> 10) |
| a new bound or pattern that refuses nothing named (`maxLength: 255` added) | warning: possibly refused | info | Okta, SendGrid |
| a bound relaxed on a response: upper size bounds (`maxLength`, `maxItems`, `maxProperties`) | info | warning | SendGrid `maxLength` dropped |
| the same: value ranges (`maximum`, `minimum`) and lower size bounds (`minItems`, `minLength`) | info | breaking: a reader may take the first item of a list that can now be empty | Slack `profile.fields` |
| values listed under `not` (`not: {enum: [...]}`) | a value added: breaking | a value removed: breaking | (held-out suites) |
| anything else under `not` | warning naming the construct | warning | - |
| `additionalProperties` schema dropped (any value for undocumented keys); keys added to a map are compared with the map's old value schema | info | warning; a new key whose value does not fit the old map value: breaking | Okta `Group._embedded`, `ProfileMapping.properties` |
| access keywords (`readOnly`/`writeOnly`) and required lists moved inside a property never sent (never read) on a side | no change | no change | Okta `HrefObject`, `IDVEndpoints` |
| the discriminator's property dropped from a subtype's `required` | - | no change: every value carries it | Okta `AppConfigActiveDirectory` |
| a name in `required` that no schema defines (`undeclared-became-*`) | required: breaking | optional: warning | Okta `RoleGovernanceSource.resources` |
| a subtype renamed under the same discriminator value | compared as the same subtype | same | Okta `BaseEmailServer` |
| an enum value dropped from one alternative while another takes any value of its type, or while a new alternative takes the old object with that value | no change | - | Okta `roleRef`, Adyen `alma` |
| an enum value cleaned of leaked documentation markup | info (`enum-value-corrected`) | info | Okta `PolicyType` |
| an unknown `format` (`datetime`) replaced by a known one (`date-time`) | `format-added`: warning | info | Linode `DatabaseBackup.created` |
| a required header parameter declared as an apiKey scheme on the same header | info (`security-requirement-declared`) | - | SendGrid v3 -> v4 |
| a request parameter's default changed, added or removed | warning: no request is refused | - | SendGrid `on-behalf-of`, Spotify `limit` |

Each breaking finding's hint opens with what a client sees fail (`controller/diffs/fails.py`):
the request now refused, or the response value a reader cannot take. Where the engine still
cannot tell, the labelled corpus says so: `tests/diffs/vendor-labels/` marks such labels
`known_miss` with the reason, and `bench/vendors.py` prints, per rule, the findings it makes
and the labels it breaks.
"""


# The principle with the spellings it is applied across (issue 41, point 2): docs/rules.md
# states it again before the reasons of each severity.
SPELLINGS_MARKDOWN = """\
## Direction by the set of values

A schema is judged by the set of values it allows, on both sides. A **response** change is
breaking when the new contract allows a value the old one could not produce (readers must
accept more), and safe when the new set is a subset of the old (readers get fewer
values). A **request** change is breaking when the new contract refuses a value the old
one accepted, and safe when it accepts more. Schemas written differently but allowing the
same values are compared in one normal form first, so one meaning gets one verdict:

- **Nullability, in every spelling**: 3.0 `nullable: true` (also beside a one-member
  `allOf`), Swagger's `x-nullable`, 3.1 `type: [X, 'null']`, and a `oneOf`/`anyOf` with a
  null member (`{type: 'null'}`, `{const: null}`, `{enum: [null]}`). Null is taken out,
  reported as one finding (`became-nullable`, `became-not-nullable`), and what is left
  is compared as usual, so a change below the wrapper is still seen. Example (the issue's
  most frequent pattern): `oneOf: [{type: 'null'}, {$ref: Mandate}]` -> `$ref: Mandate` is
  `response-body-became-not-nullable`, info (null no longer comes); if `Mandate` also lost
  its required `id`, `response-property-removed-required` (breaking) is reported too. The
  reverse on a response is `became-nullable`, breaking (a reader must now accept null);
  on a request, adding null is info (one more value accepted) and removing it breaking
  (a client that sent null is refused). A schema with no constraint at all allows null
  anyway, so `nullable` on it changes nothing; a schema of null alone that gains a type
  is a change of type.
- **Enums written as constants**: a `oneOf`/`anyOf` whose members are all `const` (with
  titles, descriptions or the same `type`) is the `enum` of those values. Example (the
  issue's pattern): `oneOf: [{const: card, title: Card}, {const: sepa, title: SEPA}]`
  gaining `{const: ideal, title: iDEAL}` is `response-property-enum-value-added`, a
  warning, exactly as `enum: [card, sepa]` -> `enum: [card, sepa, ideal]` is (it was
  `one-of-added`, breaking); rewriting one spelling as the other is no change.
- **One-member alternatives**: a `oneOf`/`anyOf` of one member is that member (an `allOf`
  of it beside other keywords) when the other side has no alternatives. Example (Box):
  `partner_item: {oneOf: [$ref: ...Slack]}` -> `{allOf: [$ref: ...Slack]}` is no change
  (it was `response-property-restructured`, breaking).
"""

AGENTS_MARKDOWN = """\
## Renames and protocol drift (MCP servers, A2A agents)

**Renames.** A tool removed and another added in the same check are paired as one
`tool-renamed` (an A2A skill: `skill-renamed`), still breaking for a caller by the old name,
reported on the old name with the new one in the summary (`tool renamed from tavily-search to
tavily_search; also changed: description, input schema`). The pairing
(`controller/diffs/renames.py`) is deterministic: first by **spelling** (the names are equal
ignoring case and the separators `-`, `_`, `.`, `:`, `/` and spaces), then, among the units
left, by **content**: an equal input schema with its documenting keywords (`description`,
`title`, `examples`, `$comment`, `$schema`) left out (a skill: equal input and output schemas
and equal input and output modes, its own or the card's defaults) and similar descriptions
(`difflib` ratio of the whitespace-normalised lower-case texts at least 0.6, each text at
least 5 words: two short texts agree by chance). A removed unit with two candidates, or an
added one claimed twice, is not paired: it stays a removal and an addition.

**Protocol drift.** A snapshot holds the server's negotiated `protocol_version` and its
`capabilities`. A newer version is `protocol-version-changed` (info: driftgate negotiates its
own session, each client negotiates its own, and the surface is compared on its own); an
older one is `protocol-version-downgraded` (warning: features of the newer revision may be
gone). A core capability (`tools`, `prompts`, `resources`: what the snapshot lists) no longer
advertised is `capability-removed` (breaking); another one (`logging`, `completions`,
`tasks` ...) `capability-removed-minor` (warning). A sub-flag turned off (`listChanged`,
`subscribe`, a nested `tasks` request) is `capability-flag-removed` (warning: a notification
stops coming or a subscription is refused, nothing listed is gone); any other change of a
capability's flags is `capability-flags-changed` (info). A side without a protocol version
or capabilities (a snapshot stored without them, a bare `tools/list` result) is no evidence
of a change: they are compared only when both sides have them.
"""
