"""Reconcile one git source: read `.driftgate/*.yaml` at a revision, validate all of it, plan,
apply in one transaction, and record the status.

The loop follows Flux's source/kustomize controllers:

- fetch (pygit2, only when the remote head moved) -> `lastFetchedRevision`;
- a revision already applied is a no-op (bindings that resolved to nothing are retried);
- a revision that failed validation stays `Stalled` until a new revision arrives;
- validate every file (schema with file:line:column, then semantics), resolve `${env:NAME}`
  header references, and compute the desired objects with a digest each; a file whose bytes
  did not change since the applied revision is not parsed or schema-checked again (its
  checked data is kept in the source's inventory), everything else is computed anew;
- plan by the inventory of objects this source owns (`managed_source`): create, update (the
  digest changed), prune; refuse to prune everything unless the source sets `allowEmpty`;
- apply everything and the new status in one transaction, so a failure or a kill halfway
  leaves the previous state serving; status says what was applied and what is wrong.

Objects created through the API are never pruned: the inventory holds only this source's.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import math
import os
import re
import time
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any

import pydantic
import yaml
from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session, defer

import controller
from controller import metrics, tracing
from controller.collector import collector_paused
from controller.contracts.kinds import MCP
from controller.crypto import SecretBox
from controller.gitsources import load as gitops_load
from controller.gitsources.configschema import gitops_schema
from controller.gitsources.load import (
    FILES,
    HOSTED_AGENTS,
    HOSTED_DIRECTORY,
    Bundle,
    Problem,
    file_of,
    json_path,
    load_bundle,
)
from controller.logs import log
from controller.mcpauth.grants import OAuthSecrets, OAuthSettings
from controller.mcpauth.rows import set_oauth
from controller.model import conditions as cond
from controller.model.cardkeys import CARD_WATCH_TYPE
from controller.model.catalog import SYSTEM_TEMPLATES
from controller.model.gitops import HOSTED_PRESETS, Unreadable
from controller.model.ingress_profiles import content_hash
from controller.model.waivers import waiver_key
from controller.settings import Settings, SourceSpec
from controller.sources.git import (
    GitCache,
    GitError,
    GitRemote,
    redact_url,
    set_network_timeouts,
)
from controller.store import audit
from controller.store.db import Database
from controller.store.models import (
    Agent,
    AgentWatch,
    Dashboard,
    IngressProfile,
    Org,
    Source,
    Template,
    WaiverRow,
    Watch,
    WatchSet,
)
from controller.store.types import utcnow
from controller.store.watch_rows import set_contract, set_headers, set_tags
from controller.targets import header_value_problem
from controller.toollock.assessor import watch_lock
from controller.toollock.hosted import HOSTED_LOCK, HOSTED_URL
from controller.watches.status import INITIAL as INITIAL_DRIFT_STATUS

logger = logging.getLogger("driftgate.reconcile")

KINDS = ("templates", "watchSets", "watches", "agents", "profiles", "dashboards", "waivers")
RUNS_KEPT = 10
PRESET_POLICIES = ("notify-only", "staging-strict", "production-guard")
ENV_REFERENCE = re.compile(r"^\$\{env:([A-Z_][A-Z0-9_]*)\}$")
DEFAULT_INTERVAL_MINUTES = 15
GIT_CONNECT_SECONDS = 15.0
GIT_READ_SECONDS = 60.0
# The inventory holds the checked data of the applied files: read it only when it is used.
_WITHOUT_INVENTORY = defer(Source.inventory)


@dataclass
class Desired:
    """The objects a revision declares, by kind and name, each with its values and digest."""

    templates: dict[str, dict[str, Any]] = field(default_factory=dict)
    watch_sets: dict[str, dict[str, Any]] = field(default_factory=dict)
    watches: dict[str, dict[str, Any]] = field(default_factory=dict)
    agents: dict[str, dict[str, Any]] = field(default_factory=dict)
    profiles: dict[str, dict[str, Any]] = field(default_factory=dict)
    dashboards: dict[str, dict[str, Any]] = field(default_factory=dict)
    waivers: dict[str, dict[str, Any]] = field(default_factory=dict)

    def of(self, kind: str) -> dict[str, dict[str, Any]]:
        return {
            "templates": self.templates,
            "watchSets": self.watch_sets,
            "watches": self.watches,
            "agents": self.agents,
            "profiles": self.profiles,
            "dashboards": self.dashboards,
            "waivers": self.waivers,
        }[kind]


@dataclass
class Plan:
    """What applying a revision changes, by kind: names to create, update and prune."""

    create: dict[str, list[str]] = field(default_factory=lambda: {k: [] for k in KINDS})
    update: dict[str, list[str]] = field(default_factory=lambda: {k: [] for k in KINDS})
    prune: dict[str, list[str]] = field(default_factory=lambda: {k: [] for k in KINDS})
    current: dict[str, dict[str, tuple[str, str | None]]] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not any(self.create[k] or self.update[k] or self.prune[k] for k in KINDS)

    def counts(self) -> dict[str, int]:
        return {
            "created": sum(len(v) for v in self.create.values()),
            "updated": sum(len(v) for v in self.update.values()),
            "pruned": sum(len(v) for v in self.prune.values()),
        }

    def as_dict(self) -> dict[str, Any]:
        return {
            "create": {k: sorted(v) for k, v in self.create.items() if v},
            "update": {k: sorted(v) for k, v in self.update.items() if v},
            "prune": {k: sorted(v) for k, v in self.prune.items() if v},
            **self.counts(),
        }


@dataclass
class RunResult:
    source: str
    result: str  # applied | unchanged | stalled | failed | suspended | dry_run
    revision: str | None = None
    plan: Plan | None = None
    problems: list[Problem] = field(default_factory=list)
    message: str = ""
    duration_ms: int = 0
    invalid_files: bool = False
    # The revision already stalled with these settings: its status and problems stand as
    # they were recorded (file:line), and the poll is not added to the history again.
    repeat: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "result": self.result,
            "revision": self.revision,
            "message": self.message,
            "durationMs": self.duration_ms,
            "plan": self.plan.as_dict() if self.plan is not None else None,
            "problems": [p.to_json() for p in self.problems],
        }


class Reconciler:
    """Reconciles the sources of one controller (or one CLI call)."""

    def __init__(
        self,
        settings: Settings,
        database: Database,
        box: SecretBox,
        *,
        env: Mapping[str, str],
        cache: GitCache | None = None,
        controller: str | None = None,
    ) -> None:
        self.settings = settings
        self.controller = controller  # the controller that runs it, for its log and span
        self.database = database
        self.box = box
        self.env = env
        self.cache = cache or GitCache(
            settings.data_dir / "git",
            env=env,
            max_file_bytes=settings.git_max_file_bytes,
            max_revision_bytes=settings.git_max_revision_bytes,
        )
        set_network_timeouts(GIT_CONNECT_SECONDS, GIT_READ_SECONDS)
        self._digest_key = box.derived_keys("gitops digest")[0]

    # -- the loop --------------------------------------------------------------------------

    def reconcile(
        self, spec: SourceSpec, *, force: bool = False, dry_run: bool = False
    ) -> RunResult:
        """Reconcile one source, in ordered steps: 1. fetch the branch and read the
        `.driftgate/` directory of its revision (`_reconcile`); 2. load: parse, check and
        compute the desired state (`_load`, `desired_state`); 3. plan the creates, updates and
        prunes against the store (`plan`); 4. apply them kind by kind (`apply`, driven by the
        `APPLY` table); 5. record the status: the run, the conditions, the problems
        (`_record_run`). A step that fails ends the run with its result; nothing half-applied
        stays (apply runs in one transaction)."""
        started = time.perf_counter()
        attributes = {tracing.SOURCE_ID: spec.name, tracing.CONTROLLER_ID: self.controller}
        with tracing.span("reconcile", attributes) as span:
            result = self._reconcile(spec, force=force, dry_run=dry_run)
            result.duration_ms = int((time.perf_counter() - started) * 1000)
            if not dry_run:
                self._record_run(spec, result)
                metrics.reconcile_done(spec.name, result.result, time.perf_counter() - started)
            tracing.annotate(
                span, {tracing.REVISION: result.revision, tracing.RECONCILE_RESULT: result.result}
            )
            if result.result in ("failed", "stalled"):
                tracing.failed(span, result.result)
            # The run's status message is what the API shows of it (no credentials: URLs are
            # redacted there); the problems themselves are in the source's status.
            log(
                logger,
                logging.INFO if result.result != "unchanged" else logging.DEBUG,
                "reconcile.complete",
                source=spec.name,
                result=result.result,
                revision=result.revision,
                durationMs=result.duration_ms,
                controller=self.controller,
                **(
                    {"message": result.message, "problems": len(result.problems)}
                    if result.result in ("failed", "stalled")
                    else {}
                ),
                **(result.plan.counts() if result.plan else {}),
            )
        return result

    def _reconcile(self, spec: SourceSpec, *, force: bool, dry_run: bool) -> RunResult:
        org_id = self._ensure_source(spec)
        if org_id is None:
            return RunResult(spec.name, "failed", message=f"org {spec.org!r} does not exist")
        if spec.suspend and not force:
            return RunResult(spec.name, "suspended", message="the source is suspended")
        try:
            outcome = self.cache.fetch(spec.name, _remote(spec))
        except GitError as exc:
            return RunResult(spec.name, "failed", message=f"fetch failed: {exc.message}")
        revision = outcome.revision
        with self.database.session() as session:
            source = session.get(Source, spec.name, options=[_WITHOUT_INVENTORY])
            assert source is not None
            applied, attempted = source.last_applied_revision, source.last_attempted_revision
            stalled = _condition(source.conditions, cond.STALLED)
        if revision == applied and not force:
            if not dry_run:
                self._retry_bindings(spec.name, org_id)
            return RunResult(spec.name, "unchanged", revision, message="revision already applied")
        with self.database.session() as session:
            inventory = dict(
                session.scalar(select(Source.inventory).where(Source.name == spec.name)) or {}
            )
        stalled_on = inventory.get("invalidFilesFor")
        if (
            revision == attempted
            and stalled
            and stalled.get("status") == cond.TRUE
            and stalled_on == self._validated_with(spec)
            and not force
        ):
            return RunResult(
                spec.name,
                "stalled",
                revision,
                message="revision failed before; waiting for a new one",
                invalid_files=True,
                repeat=True,
            )
        try:
            read = self.cache.read_directory(
                spec.name, revision, spec.path, wanted=gitops_load.is_read
            )
        except GitError as exc:
            return RunResult(spec.name, "failed", revision, message=f"read failed: {exc.message}")
        files, unreadable = dict(read.files), dict(read.unreadable)
        hosted = _hosted_directory(spec.path)
        if hosted is not None:
            # The hosted product's `.driftguard/agents.yaml` beside the directory (its other
            # files are the hosted harness's, not read), and its MCP lock
            # (`controller.toollock.hosted`), read as driftgate's own.
            for name in (HOSTED_AGENTS, HOSTED_LOCK):
                folder, _, file_name = name.removeprefix(HOSTED_DIRECTORY).rpartition("/")
                try:
                    found = self.cache.read_file(
                        spec.name, revision, f"{hosted}{folder}", file_name
                    )
                except GitError as exc:
                    return RunResult(
                        spec.name, "failed", revision, message=f"read failed: {exc.message}"
                    )
                if isinstance(found, Unreadable):
                    unreadable[name] = found
                elif found is not None:
                    files[name] = found
        with collector_paused():
            loaded = self._load(spec, org_id, revision, files, inventory.get("files"), unreadable)
            if isinstance(loaded, RunResult):
                return loaded
            bundle, desired, cache_key = loaded
            return self._plan_and_apply(
                spec, org_id, revision, files, bundle, desired, cache_key, dry_run=dry_run
            )

    def _load(
        self,
        spec: SourceSpec,
        org_id: str,
        revision: str,
        files: Mapping[str, bytes],
        checked_files: Any,
        unreadable: Mapping[str, Unreadable],
    ) -> tuple[Bundle, Desired, str] | RunResult:
        """Step 2, load: parse and check the files (reusing the checked data of unchanged
        ones) and compute the desired state; a revision with problems (a file that could not
        be read is one) stops here, stalled."""
        with self.database.session() as session:
            api_templates = _api_templates(session, org_id)
            known_watches = {
                value
                for row in session.execute(
                    select(Watch.name, Watch.id).where(Watch.org_id == org_id)
                )
                for value in row
            }
            org_names = {org_id, spec.org, session.scalar(select(Org.name).where(Org.id == org_id))}
        known_templates = set(api_templates) | set(SYSTEM_TEMPLATES)
        cache_key = self._load_cache_key(spec)
        checked, earlier = self._checked_files(checked_files, cache_key, files)
        bundle = load_bundle(
            files,
            directory=spec.path,
            known_templates=known_templates,
            known_watches=known_watches,
            checked=checked,
            earlier=earlier,
            unreadable=unreadable,
            max_file_bytes=self.settings.git_max_file_bytes,
            org={name for name in org_names if name},
        )
        desired, problems = (
            (Desired(), []) if bundle.problems else self.desired_state(bundle, spec, api_templates)
        )
        if bundle.checked and (bundle.problems or problems):
            # Only a full parse knows where things are: load again to place the problems.
            bundle = load_bundle(
                files,
                directory=spec.path,
                known_templates=known_templates,
                known_watches=known_watches,
                unreadable=unreadable,
                max_file_bytes=self.settings.git_max_file_bytes,
                org={name for name in org_names if name},
            )
            if not bundle.problems:
                desired, problems = self.desired_state(bundle, spec, api_templates)
        if bundle.problems:
            # Only problems in the files themselves wait for a new revision; the others (a
            # missing environment variable, a conflict, allowEmpty) are retried every run.
            return RunResult(
                spec.name,
                "stalled",
                revision,
                problems=bundle.problems,
                message="invalid revision",
                invalid_files=True,
            )
        if problems:
            return RunResult(
                spec.name, "stalled", revision, problems=problems, message="invalid revision"
            )
        return bundle, desired, cache_key

    def _plan_and_apply(
        self,
        spec: SourceSpec,
        org_id: str,
        revision: str,
        files: Mapping[str, bytes],
        bundle: Bundle,
        desired: Desired,
        cache_key: str,
        *,
        dry_run: bool,
    ) -> RunResult:
        """Steps 3 and 4 in one transaction: plan against the store (refusing conflicts and an
        accidental prune of everything), then apply the plan and mark the revision applied."""
        try:
            with self.database.transaction() as session:
                plan, conflicts = self.plan(session, spec.name, org_id, desired)
                if conflicts:
                    raise _Refused(conflicts)
                declared = sum(len(desired.of(k)) for k in KINDS)
                owned = sum(len(plan.current.get(k, {})) for k in KINDS)
                if declared == 0 and owned > 0 and not spec.allow_empty:
                    raise _Refused(
                        [
                            Problem(
                                file=spec.path,
                                line=1,
                                column=1,
                                path="",
                                message=(
                                    f"this revision declares nothing and would prune all {owned} "
                                    "objects of the source; set allowEmpty on the source "
                                    "to allow it"
                                ),
                            )
                        ]
                    )
                if dry_run:
                    session.rollback()
                    return RunResult(spec.name, "dry_run", revision, plan)
                self.apply(session, spec, org_id, revision, desired, plan)
                _set_applied(
                    session,
                    spec.name,
                    revision,
                    self._file_cache(session, spec.name, cache_key, files, bundle),
                )
        except _Refused as refused:
            return RunResult(
                spec.name, "stalled", revision, problems=refused.problems, message="refused"
            )
        return RunResult(spec.name, "applied", revision, plan)

    def _validated_with(self, spec: SourceSpec) -> str:
        """What a stalled revision was validated with: the source definition and the limits
        of files read from git; a change of either validates it again (a file refused as too
        large may fit a raised limit)."""
        limits = f"{self.settings.git_max_file_bytes}/{self.settings.git_max_revision_bytes}"
        return hashlib.sha256(f"{_spec_digest(spec)}\0{limits}".encode()).hexdigest()[:16]

    # -- checked files ---------------------------------------------------------------------

    def _load_cache_key(self, spec: SourceSpec) -> str:
        """What checked file data depends on besides the bytes: the code that parses and
        schema-checks them and the source definition. Keyed with the secret, so data that this
        key did not write (another installation, a hand-edited row) is never taken as checked."""
        material = f"{_load_code_digest()}\0{_spec_digest(spec)}".encode()
        return hmac.new(self._digest_key, b"checked files\0" + material, hashlib.sha256).hexdigest()

    def _entry_mac(self, key: str, name: str, sha: str, data: str) -> str:
        message = f"{key}\0{name}\0{sha}\0{data}".encode()
        return hmac.new(self._digest_key, message, hashlib.sha256).hexdigest()

    def _checked_files(
        self, cache: Any, key: str, files: Mapping[str, bytes]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The checked data of the applied revision's files (with the same code, source
        definition and secret; nothing on any doubt), split in two: the files whose bytes did
        not change (`checked` for `load_bundle`) and those that did (`earlier`)."""
        checked: dict[str, Any] = {}
        earlier: dict[str, Any] = {}
        entries = cache.get("entries") if isinstance(cache, dict) else None
        if not isinstance(entries, dict) or cache.get("key") != key:
            return checked, earlier
        for name, entry in entries.items():
            if name not in files or not isinstance(entry, dict):
                continue
            sha, blob, mac = entry.get("sha256"), entry.get("data"), entry.get("mac")
            if not (isinstance(sha, str) and isinstance(blob, str) and isinstance(mac, str)):
                continue
            if not hmac.compare_digest(mac, self._entry_mac(key, name, sha, blob)):
                continue
            try:
                data = json.loads(zlib.decompress(base64.b64decode(blob)))
            except (ValueError, zlib.error):
                continue
            same = sha == hashlib.sha256(files[name]).hexdigest()
            (checked if same else earlier)[name] = data
        return checked, earlier

    def _file_cache(
        self,
        session: Session,
        source: str,
        key: str,
        files: Mapping[str, bytes],
        bundle: Bundle,
    ) -> dict[str, Any]:
        """The inventory to store with an applied revision: what it held, plus the checked
        data of this revision's files (entries of unchanged files are kept as they were)."""
        inventory = dict(
            session.scalar(select(Source.inventory).where(Source.name == source)) or {}
        )
        previous = inventory.get("files")
        kept = previous.get("entries") if isinstance(previous, dict) else None
        kept = kept if isinstance(kept, dict) else {}
        entries: dict[str, Any] = {}
        for name, data in bundle.data.items():
            if name in bundle.checked and name in kept:
                entries[name] = kept[name]
                continue
            if not _json_native(data):
                continue  # would not come back the same from JSON
            blob = base64.b64encode(
                zlib.compress(json.dumps(data, separators=(",", ":")).encode(), 6)
            ).decode()
            sha = hashlib.sha256(files[name]).hexdigest()
            entries[name] = {
                "sha256": sha,
                "data": blob,
                "mac": self._entry_mac(key, name, sha, blob),
            }
        inventory["files"] = {"key": key, "entries": entries}
        return inventory

    # -- desired state ---------------------------------------------------------------------

    def desired_state(
        self, bundle: Bundle, spec: SourceSpec, api_templates: Mapping[str, Template]
    ) -> tuple[Desired, list[Problem]]:
        desired = Desired()
        problems: list[Problem] = []
        base = spec.path.rstrip("/")
        templates_file = f"{base}/templates.yaml"
        declared_templates: dict[str, dict[str, Any]] = {}
        if bundle.templates is not None:
            raw = bundle.templates.model_dump(by_alias=True, exclude_none=True)
            for index, template in enumerate(raw.get("templates", [])):
                headers, header_problems = self._resolve_headers(
                    bundle, "templates.yaml", ("templates", index, "headers"), template
                )
                problems += header_problems
                values = {
                    "name": template["name"],
                    "watch_type": template["watchType"],
                    "url_pattern": template["urlPattern"],
                    "policy_preset": template.get("policyPreset"),
                    "tags": list(template.get("tags", [])),
                    "headers": headers,
                    "path": templates_file,
                }
                declared_templates[template["name"]] = values
                desired.templates[template["name"]] = self._with_digest(values)
        # watch-sets.yaml, then watch-sets/*.yaml: each object records the file it is in.
        for set_name, sets_model in bundle.watch_set_files.items():
            sets_file = f"{base}/{set_name}"
            raw = sets_model.model_dump(by_alias=True, exclude_none=True)
            for set_index, watch_set in enumerate(raw.get("watchSets", [])):
                desired.watch_sets[watch_set["name"]] = self._with_digest(
                    {
                        "name": watch_set["name"],
                        "environment": watch_set.get("environment"),
                        "description": watch_set.get("description"),
                        "path": sets_file,
                    }
                )
                for index, entry in enumerate(watch_set.get("watches", [])):
                    where = ("watchSets", set_index, "watches", index)
                    template = _template_values(
                        entry.get("template"), declared_templates, api_templates, self.box
                    )
                    headers, header_problems = self._resolve_headers(
                        bundle, set_name, (*where, "headers"), entry
                    )
                    problems += header_problems
                    merged_headers = {**(template.get("headers") or {}), **headers}
                    tags = list(dict.fromkeys([*template.get("tags", []), *entry.get("tags", [])]))
                    oauth, oauth_problems = self._resolve_oauth(
                        bundle, set_name, (*where, "oauth"), entry
                    )
                    problems += oauth_problems
                    values = {
                        "name": entry["name"],
                        "watch_type": entry.get("watchType") or template.get("watch_type"),
                        "url": entry.get("url") or template.get("url_pattern"),
                        "headers": merged_headers,
                        "oauth": oauth,
                        "tags": tags,
                        "interval_minutes": entry.get("intervalMinutes"),
                        "card_keys": entry.get("cardKeys"),
                        "watch_set": watch_set["name"],
                        "path": sets_file,
                    }
                    if values["card_keys"] and values["watch_type"] != CARD_WATCH_TYPE:
                        # A template's type is known here only (the entry's own, in the file).
                        line, column = bundle.locate(set_name, (*where, "cardKeys"))
                        problems.append(
                            Problem(
                                file=sets_file,
                                line=line,
                                column=column,
                                path=json_path((*where, "cardKeys")),
                                message=f"cardKeys: only for {CARD_WATCH_TYPE} watches (this "
                                f"one is {values['watch_type']}, from its template)",
                            )
                        )
                    desired.watches[entry["name"]] = self._with_digest(values)
        policies: dict[str, Any] = {}
        for agents_model in bundle.agent_files.values():
            policies.update(agents_model.model_dump(by_alias=True, exclude_none=True)["policies"])
        for agents_name, agents_model in bundle.agent_files.items():
            agents_file = file_of(base, agents_name)
            raw = agents_model.model_dump(by_alias=True, exclude_none=True)
            for index, agent in enumerate(raw.get("agents", [])):
                refs: list[str] = []
                for ref_index, ref in enumerate(agent.get("watches", [])):
                    if isinstance(ref, dict):
                        name = ref["name"]
                        existing = desired.watches.get(name)
                        if existing is not None and existing["url"] != ref["url"]:
                            line, column = bundle.locate(
                                agents_name, ("agents", index, "watches", ref_index)
                            )
                            problems.append(
                                Problem(
                                    file=agents_file,
                                    line=line,
                                    column=column,
                                    path=f"agents[{index}].watches[{ref_index}]",
                                    message=f"watch {name!r} is declared twice with different URLs",
                                )
                            )
                        elif existing is None:
                            desired.watches[name] = self._with_digest(
                                {
                                    "name": name,
                                    "watch_type": ref["type"],
                                    "url": ref["url"],
                                    "headers": {},
                                    "tags": [],
                                    "interval_minutes": None,
                                    "watch_set": None,
                                    "path": agents_file,
                                }
                            )
                        refs.append(name)
                    else:
                        refs.append(str(ref))
                policy = agent.get("policy") or "notify-only"
                policy = HOSTED_PRESETS.get(policy, policy)  # dev-flexible is notify-only
                values = {
                    "key": agent["id"],
                    "slug": agent.get("slug") or agent["id"],
                    "name": agent.get("name"),
                    "environment": agent.get("environment"),
                    "policy": policy,
                    "policy_rules": policies.get(policy) if policy not in PRESET_POLICIES else None,
                    "runtime_webhook": agent.get("runtime_webhook"),
                    "repo_ref": agent.get("repoRef"),
                    "vendored_paths": agent.get("vendoredPaths") or {},
                    "approvals": agent.get("approvals") or [],
                    "refs": refs,
                    "path": agents_file,
                }
                desired.agents[agent["id"]] = self._with_digest(values)
        problems += self._desired_tool_locks(bundle, desired)
        for profile_id, (file, content) in bundle.profiles.items():
            values = {"content": content, "path": file}
            desired.profiles[profile_id] = self._with_digest(values)
        if bundle.dashboards is not None:
            for dashboard in bundle.dashboards.dashboards:
                values = {
                    "description": dashboard.description or "",
                    "filters": dashboard.filters.model_dump(
                        mode="json", by_alias=True, exclude_none=True
                    ),
                    "panels": list(dashboard.panels),
                    "path": f"{base}/dashboards.yaml",
                }
                desired.dashboards[dashboard.name] = self._with_digest(values)
        if bundle.waivers is not None:
            problems += self._desired_waivers(bundle, f"{base}/waivers.yaml", desired)
        return desired, problems

    def _desired_tool_locks(self, bundle: Bundle, desired: Desired) -> list[Problem]:
        """Pin each MCP watch a lock names (`controller.toollock`): its values get the lock
        entry of its server as `tool_lock`, so the digest, and the watch, change with the
        lock. A server maps to the MCP watch of its name; a server of the hosted lock, whose
        names are slugs, also to the one MCP watch of its URL. A server that maps to no MCP
        watch of this source is a problem at its line (the revision is not applied)."""
        problems: list[Problem] = []
        for server, (file, entry) in sorted(bundle.tool_locks.items()):
            name = self._locked_watch(server, entry, desired)
            if name is None:
                line, column = bundle.tool_lock_lines.get(server, (1, 1))
                problems.append(
                    Problem(
                        file=file,
                        line=line,
                        column=column,
                        path=f"servers.{server}",
                        message=f"server {server!r} of the lock names no MCP watch of this "
                        "source: name the watch after the server (watch-sets or agents), or "
                        "lock the server under the watch's name",
                    )
                )
                continue
            values = {k: v for k, v in desired.watches[name].items() if k != "digest"}
            pins = {k: v for k, v in entry.items() if k != HOSTED_URL}
            values["tool_lock"] = watch_lock(server, pins, file)
            desired.watches[name] = self._with_digest(values)
        return problems

    def _locked_watch(self, server: str, entry: Mapping[str, Any], desired: Desired) -> str | None:
        watch = desired.watches.get(server)
        if watch is not None:
            return server if watch["watch_type"] == MCP.name else None
        url = str(entry.get(HOSTED_URL) or "").rstrip("/")
        if not url:
            return None
        found = [
            name
            for name, values in desired.watches.items()
            if values["watch_type"] == MCP.name and str(values["url"]).rstrip("/") == url
        ]
        return found[0] if len(found) == 1 else None

    def _desired_waivers(self, bundle: Bundle, file: str, desired: Desired) -> list[Problem]:
        """Each waiver by what it matches (`waiver_key`); an expiry beyond the setting
        `waiver_max_days` from today, or the same waiver twice, is a problem at its place."""
        assert bundle.waivers is not None
        problems: list[Problem] = []
        latest = utcnow().date() + timedelta(days=self.settings.waiver_max_days)

        def problem(where: tuple[str | int, ...], message: str) -> None:
            line, column = bundle.locate("waivers.yaml", where)
            path = f"waivers[{where[1]}]" + (f".{where[2]}" if len(where) > 2 else "")
            problems.append(
                Problem(file=file, line=line, column=column, path=path, message=message)
            )

        for index, waiver in enumerate(bundle.waivers.waivers):
            if waiver.expires > latest:
                problem(
                    ("waivers", index, "expires"),
                    f"expires {waiver.expires.isoformat()} is more than "
                    f"{self.settings.waiver_max_days} days away (setting waiver_max_days): "
                    f"the latest allowed is {latest.isoformat()}",
                )
            key = waiver_key(waiver)
            if key in desired.waivers:
                problem(
                    ("waivers", index), "the same waiver (watch, rule and where) is listed twice"
                )
                continue
            values = {
                **waiver.model_dump(mode="json"),
                "path": file,
                "match_path": waiver.path,
            }
            desired.waivers[key] = self._with_digest(values)
        return problems

    def _resolve_headers(
        self,
        bundle: Bundle,
        file: str,
        where: tuple[Any, ...],
        declared: Mapping[str, Any],
        what: str = "header",
    ) -> tuple[dict[str, str], list[Problem]]:
        headers: dict[str, str] = {}
        problems: list[Problem] = []
        for name, value in (declared.get("headers") or {}).items():
            match = ENV_REFERENCE.match(str(value))
            if match is None:
                headers[name] = str(value)
                continue
            variable = match.group(1)
            resolved = self.env.get(variable)
            if resolved is None:
                problem = "which is not set in the controller's environment"
            else:
                # The value is a secret: name the variable, never show what it holds.
                unsendable = header_value_problem(resolved)
                if unsendable is None:
                    headers[name] = resolved
                    continue
                problem = f"whose value cannot be sent: {unsendable}"
            line, column = bundle.locate(file, (*where, name))
            problems.append(
                Problem(
                    file=file,
                    line=line,
                    column=column,
                    path=".".join(str(p) for p in (*where, name)),
                    message=f"{what} {name!r} references ${{env:{variable}}}, {problem}",
                )
            )
        return headers, problems

    def _resolve_oauth(
        self, bundle: Bundle, file: str, where: tuple[Any, ...], declared: Mapping[str, Any]
    ) -> tuple[dict[str, Any] | None, list[Problem]]:
        """A watch's `oauth` with its `${env:NAME}` secrets resolved (as headers are)."""
        oauth = declared.get("oauth")
        if oauth is None:
            return None, []
        secrets = {k: oauth[k] for k in ("clientSecret", "refreshToken") if k in oauth}
        resolved, problems = self._resolve_headers(
            bundle, file, where, {"headers": secrets}, what="oauth secret"
        )
        settings = {k: v for k, v in oauth.items() if k not in secrets}
        return {"settings": settings, "secrets": resolved}, problems

    def _with_digest(self, values: dict[str, Any]) -> dict[str, Any]:
        # Keyed, so resolved secret header values never appear in the store, not even hashed
        # with a plain hash; a rotated secret still changes the digest and updates the watch.
        canonical = json.dumps(values, sort_keys=True, separators=(",", ":"), default=str)
        values["digest"] = hmac.new(
            self._digest_key, canonical.encode(), hashlib.sha256
        ).hexdigest()
        return values

    # -- plan ------------------------------------------------------------------------------

    def plan(
        self, session: Session, source: str, org_id: str, desired: Desired
    ) -> tuple[Plan, list[Problem]]:
        plan = Plan()
        conflicts: list[Problem] = []
        for applied in APPLY:
            kind, model, key_column = applied.name, applied.model, applied.key
            wanted = desired.of(kind)
            rows = session.execute(
                select(key_column, model.id, model.managed_source, model.managed_digest).where(
                    model.org_id == org_id
                )
            ).all()
            owned: dict[str, tuple[str, str | None]] = {}
            for key, row_id, managed_source, digest in rows:
                if managed_source == source:
                    owned[key] = (row_id, digest)
                elif key in wanted:
                    owner = f"source {managed_source!r}" if managed_source else "the API (not git)"
                    conflicts.append(
                        Problem(
                            file=wanted[key]["path"],
                            line=1,
                            column=1,
                            path=kind,
                            message=f"{_singular(kind)} {key!r} already exists, owned by {owner}",
                        )
                    )
            if kind == "agents":
                slugs = {v["slug"]: k for k, v in wanted.items()}
                for slug, other_source in session.execute(
                    select(Agent.slug, Agent.managed_source).where(
                        Agent.org_id == org_id, Agent.slug.in_(list(slugs))
                    )
                ).all():
                    if other_source != source:
                        conflicts.append(
                            Problem(
                                file=wanted[slugs[slug]]["path"],
                                line=1,
                                column=1,
                                path="agents",
                                message=f"agent slug {slug!r} is already used in this org",
                            )
                        )
            plan.current[kind] = owned
            for key, values in wanted.items():
                if key not in owned:
                    plan.create[kind].append(key)
                elif owned[key][1] != values["digest"]:
                    plan.update[kind].append(key)
            plan.prune[kind] = [key for key in owned if key not in wanted]
        return plan, conflicts

    # -- apply -----------------------------------------------------------------------------

    def apply(
        self,
        session: Session,
        spec: SourceSpec,
        org_id: str,
        revision: str,
        desired: Desired,
        plan: Plan,
    ) -> None:
        """Write `plan` kind by kind, in `APPLY` order: each kind's prunes (deferred until the
        kinds that point at it are written, for watch sets), its creates and updates through
        its `write`, and a flush where a later kind needs the ids."""
        applying = _Applying(self, session, org_id, desired, plan, spec.name, revision)
        for kind in APPLY:
            if kind.prepare is not None:
                kind.prepare(applying)
            if kind.prune_after is None:
                applying.prune(kind)
            for key in plan.create[kind.name] + plan.update[kind.name]:
                applying.write(kind, key)
            for later in APPLY:
                if later.prune_after == kind.name:
                    applying.prune(later)
            if kind.flush_after:
                session.flush()
        # Unchanged objects record the revision they were last confirmed at.
        for kind in APPLY:
            session.execute(
                update(kind.model)
                .where(kind.model.org_id == org_id, kind.model.managed_source == spec.name)
                .values(managed_revision=revision)
                .execution_options(synchronize_session=False)
            )
        session.flush()
        # Agents whose bindings pointed at something this revision created or removed.
        self._rebind(session, spec.name, org_id)
        self._audit_waivers(applying)

    def _write_template(self, applying: _Applying, template: Template, values: Values) -> None:
        template.watch_type = values["watch_type"]
        template.url_pattern = values["url_pattern"]
        template.policy_preset = values["policy_preset"]
        template.tags = values["tags"]
        template.headers_ciphertext = (
            self.box.encrypt_json(values["headers"]) if values["headers"] else None
        )
        template.header_names = sorted(values["headers"])

    def _write_watch_set(self, applying: _Applying, watch_set: WatchSet, values: Values) -> None:
        watch_set.environment = values["environment"]
        watch_set.description = values["description"]

    def _write_watch(self, applying: _Applying, watch: Watch, values: Values) -> None:
        set_contract(watch, values["url"], values["watch_type"])
        interval = values["interval_minutes"] or DEFAULT_INTERVAL_MINUTES
        if watch.interval_minutes != interval:
            watch.interval_minutes = interval
            watch.next_check_at = None  # scheduled again on the new interval, from now
        set_name = values["watch_set"]
        watch.watch_set_id = applying.set_ids.get(set_name) if set_name else None
        set_headers(watch, values["headers"], self.box)
        oauth = values.get("oauth")
        if oauth is None:
            set_oauth(watch, None, None, self.box)
        else:
            declared, secrets = oauth["settings"], oauth["secrets"]
            set_oauth(
                watch,
                OAuthSettings(
                    grant=declared["grant"],
                    client_id=declared["clientId"],
                    scope=declared.get("scope"),
                    authorization_server=declared.get("authorizationServer"),
                ),
                OAuthSecrets(
                    client_secret=secrets.get("clientSecret"),
                    refresh_token=secrets.get("refreshToken"),
                ),
                self.box,
            )
        set_tags(watch, values["tags"])
        watch.card_keys = values.get("card_keys")
        # The pinned tool set of its server (`controller.toollock`); none without a lock.
        watch.tool_lock = values.get("tool_lock")

    def _write_agent(self, applying: _Applying, agent: Agent, values: Values) -> None:
        agent.slug = values["slug"]
        agent.name = values["name"]
        agent.environment = values["environment"]
        agent.policy = values["policy"]
        agent.policy_rules = values["policy_rules"]
        agent.runtime_webhook = values["runtime_webhook"]
        agent.repo_ref = values["repo_ref"]
        agent.vendored_paths = values.get("vendored_paths") or None
        agent.approvals = values["approvals"]
        agent.bindings = [
            AgentWatch(position=position, ref=ref, watch_id=applying.lookup.get(ref))
            for position, ref in enumerate(values["refs"])
        ]

    def _write_dashboard(self, applying: _Applying, row: Dashboard, values: Values) -> None:
        row.description = values["description"]
        row.filters = values["filters"]
        row.panels = values["panels"]
        row.updated_at = utcnow()

    def _write_profile(self, applying: _Applying, profile: IngressProfile, values: Values) -> None:
        content = values["content"]
        profile.version = int(content["version"])
        profile.content = content
        profile.content_hash = content_hash(content)
        profile.watch_id = content.get("watchId")
        profile.updated_at = utcnow()

    def _write_waiver(self, applying: _Applying, row: WaiverRow, values: Values) -> None:
        expires = date.fromisoformat(values["expires"])
        if row.expires != expires:
            # A new expiry is a new waiver for its owner: both notices again.
            row.expiring_notified_at = row.expired_notified_at = None
        row.watch = values["watch"]
        row.rule = values["rule"]
        row.path = values["match_path"]
        row.operation = values["operation"]
        row.tool = values["tool"]
        row.owner = values["owner"]
        row.reason = values["reason"]
        row.expires = expires
        row.updated_at = utcnow()

    def _audit_waivers(self, applying: _Applying) -> None:
        """One audit entry per waiver this revision adds, changes or removes, and the org's
        watches whose comparison a waiver touched counted again (`controller.waivers`)."""
        plan, session = applying.plan, applying.session
        moves = (
            ("waiver.create", plan.create["waivers"]),
            ("waiver.update", plan.update["waivers"]),
            ("waiver.delete", plan.prune["waivers"]),
        )
        actor = f"source:{applying.source}"
        for action, keys in moves:
            for key in keys:
                values = applying.desired.waivers.get(key, {})
                audit.record(
                    session,
                    actor=actor,
                    action=action,
                    target_type="waiver",
                    target_id=key,
                    org_id=applying.org_id,
                    details={
                        "revision": applying.revision,
                        **{
                            k: values[k]
                            for k in ("watch", "rule", "owner", "expires")
                            if k in values
                        },
                    },
                )
        if any(keys for _, keys in moves):
            # Counted again on the controller's next tick; the gate blocks them meanwhile
            # (fail closed): a waiver that left git must not keep hiding a finding.
            session.execute(
                update(Watch)
                .where(
                    Watch.org_id == applying.org_id,
                    or_(Watch.waived_until.is_not(None), Watch.drift_status == "drifted"),
                )
                .values(waived_until=utcnow())
                .execution_options(synchronize_session=False)
            )

    def _rebind(self, session: Session, source: str, org_id: str) -> int:
        """Resolve this source's bindings again when some point at nothing; returns how many
        bindings changed."""
        rows = session.execute(
            select(AgentWatch.id, AgentWatch.ref)
            .join(Agent, Agent.id == AgentWatch.agent_id)
            .where(
                Agent.org_id == org_id,
                Agent.managed_source == source,
                AgentWatch.watch_id.is_(None),
            )
        ).all()
        if not rows:
            return 0
        lookup = _watch_lookup(session, org_id, [ref for _, ref in rows])
        changed = 0
        for binding_id, ref in rows:
            watch_id = lookup.get(ref)
            if watch_id is not None:
                session.execute(
                    update(AgentWatch)
                    .where(AgentWatch.id == binding_id)
                    .values(watch_id=watch_id)
                    .execution_options(synchronize_session=False)
                )
                changed += 1
        return changed

    def _retry_bindings(self, source: str, org_id: str) -> None:
        with self.database.session() as session:
            pending = session.scalar(
                select(AgentWatch.agent_id)
                .join(Agent, Agent.id == AgentWatch.agent_id)
                .where(
                    Agent.org_id == org_id,
                    Agent.managed_source == source,
                    AgentWatch.watch_id.is_(None),
                )
                .limit(1)
            )
        if pending is None:
            return
        with self.database.transaction() as session:
            self._rebind(session, source, org_id)

    # -- status ----------------------------------------------------------------------------

    def _ensure_source(self, spec: SourceSpec) -> str | None:
        with self.database.transaction() as session:
            org_id = session.scalar(
                select(Org.id).where(or_(Org.id == spec.org, Org.name == spec.org))
            )
            source = session.get(Source, spec.name, options=[_WITHOUT_INVENTORY])
            if source is None:
                source = Source(name=spec.name, conditions=[], problems=[], runs=[], inventory={})
                session.add(source)
            source.org_id = org_id
            source.url = redact_url(spec.url)
            source.branch = spec.branch
            source.path = spec.path
            source.suspended = spec.suspend
            return org_id

    def _record_run(self, spec: SourceSpec, result: RunResult) -> None:
        now = utcnow()
        with self.database.transaction() as session:
            source = session.get(Source, spec.name, options=[_WITHOUT_INVENTORY])
            if source is None:
                return
            if result.revision is not None:  # one write per run: fetch, outcome and history
                source.last_fetched_revision = result.revision
                source.last_fetched_at = now
            if result.repeat:
                return
            run = {
                "revision": result.revision,
                "result": result.result,
                "at": now.isoformat().replace("+00:00", "Z"),
                "durationMs": result.duration_ms,
                "message": result.message,
                **(result.plan.counts() if result.plan else {}),
            }
            if (
                result.result == "unchanged"
                and source.runs
                and source.runs[0]["result"] == run["result"]
                and source.runs[0]["revision"] == run["revision"]
            ):
                # A no-op poll replaces the previous no-op instead of filling the history.
                source.runs = [run, *source.runs[1:]]
            else:
                source.runs = [run, *source.runs][:RUNS_KEPT]
            conditions = list(source.conditions or [])
            if result.result in ("applied", "unchanged"):
                if result.result == "applied":
                    source.problems = []
                    source.last_attempted_revision = result.revision
                conditions = _set_condition(
                    conditions,
                    cond.READY,
                    cond.TRUE,
                    cond.SUCCEEDED,
                    f"applied revision {result.revision}",
                    now,
                )
                conditions = _set_condition(
                    conditions, cond.STALLED, cond.FALSE, cond.SUCCEEDED, "", now
                )
            elif result.result == "stalled":
                source.last_attempted_revision = result.revision
                source.inventory = {
                    **(source.inventory or {}),
                    "invalidFilesFor": self._validated_with(spec) if result.invalid_files else None,
                }
                if result.problems:
                    source.problems = [p.to_json() for p in result.problems]
                first = str(result.problems[0]) if result.problems else result.message
                more = f" (+{len(result.problems) - 1} more)" if len(result.problems) > 1 else ""
                message = f"revision {result.revision}: {first}{more}"
                conditions = _set_condition(
                    conditions, cond.READY, cond.FALSE, cond.VALIDATION_FAILED, message, now
                )
                conditions = _set_condition(
                    conditions, cond.STALLED, cond.TRUE, cond.VALIDATION_FAILED, message, now
                )
            elif result.result == "failed":
                conditions = _set_condition(
                    conditions,
                    cond.READY,
                    cond.FALSE,
                    cond.RECONCILIATION_FAILED,
                    result.message,
                    now,
                )
            elif result.result == "suspended":
                conditions = _set_condition(
                    conditions,
                    cond.READY,
                    _status_of(conditions, cond.READY),
                    cond.SUSPENDED,
                    "reconciliation is suspended; the applied state keeps serving",
                    now,
                )
            conditions = _set_condition(
                conditions, cond.RECONCILING, cond.FALSE, cond.IDLE, "", now
            )
            source.conditions = conditions
            source.next_reconcile_at = None


Values = dict[str, Any]


@dataclass(frozen=True)
class ApplyKind:
    """How one `.driftgate/` kind reaches the store: its plan key, its row model and natural key
    column, how a new row starts, how the desired values are written onto a row
    (`Reconciler._write_*`), what must be read before its rows are written (`prepare`), and
    ordering: `prune_after` defers its prunes until that kind is written (rows of it point
    here), `flush_after` flushes so later kinds see its ids. A new kind (profiles,
    dashboards) is one entry in `APPLY` and its write method."""

    name: str
    model: Any
    key: Any
    new: Callable[[str, str], Any]
    write: Callable[[Reconciler, _Applying, Any, Values], None]
    prepare: Callable[[_Applying], None] | None = None
    prune_after: str | None = None
    flush_after: bool = False


@dataclass
class _Applying:
    """One apply in progress: what the kinds' writes share."""

    reconciler: Reconciler
    session: Session
    org_id: str
    desired: Desired
    plan: Plan
    source: str
    revision: str
    set_ids: dict[str, str] = field(default_factory=dict)  # watch set name -> id
    lookup: dict[str, str] = field(default_factory=dict)  # agent watch reference -> watch id

    def prune(self, kind: ApplyKind) -> None:
        for key in self.plan.prune[kind.name]:
            self.session.delete(
                self.session.get_one(kind.model, self.plan.current[kind.name][key][0])
            )

    def write(self, kind: ApplyKind, key: str) -> None:
        values = self.desired.of(kind.name)[key]
        current = self.plan.current[kind.name]
        row = (
            self.session.get_one(kind.model, current[key][0])
            if key in current
            else kind.new(self.org_id, key)
        )
        kind.write(self.reconciler, self, row, values)
        row.managed_source = self.source
        row.managed_revision = self.revision
        row.managed_path = values["path"]
        row.managed_digest = values["digest"]
        self.session.add(row)


def _read_set_ids(applying: _Applying) -> None:
    """The ids of the revision's watch sets (flushed before), for the watches that join them."""
    names = list(applying.desired.watch_sets)
    if names:
        rows = applying.session.execute(
            select(WatchSet.name, WatchSet.id).where(
                WatchSet.org_id == applying.org_id, WatchSet.name.in_(names)
            )
        )
        applying.set_ids = dict(rows.all())


def _read_lookup(applying: _Applying) -> None:
    """The watch each reference of the changed agents resolves to."""
    plan, desired = applying.plan, applying.desired
    changed = plan.create["agents"] + plan.update["agents"]
    if changed:
        refs = [ref for key in changed for ref in desired.agents[key]["refs"]]
        applying.lookup = _watch_lookup(applying.session, applying.org_id, refs)


def _new_watch(org_id: str, name: str) -> Watch:
    return Watch(
        org_id=org_id,
        name=name,
        drift_status=INITIAL_DRIFT_STATUS.value,
        open_breaking=0,
        open_warning=0,
        open_info=0,
        header_names=[],
    )


# The kinds in the order they are applied (a kind's rows may point at earlier kinds' rows).
APPLY: tuple[ApplyKind, ...] = (
    ApplyKind(
        "templates",
        Template,
        Template.name,
        lambda org_id, name: Template(org_id=org_id, name=name),
        Reconciler._write_template,
    ),
    ApplyKind(
        "watchSets",
        WatchSet,
        WatchSet.name,
        lambda org_id, name: WatchSet(org_id=org_id, name=name),
        Reconciler._write_watch_set,
        prune_after="watches",
        flush_after=True,
    ),
    ApplyKind(
        "watches",
        Watch,
        Watch.name,
        _new_watch,
        Reconciler._write_watch,
        prepare=_read_set_ids,
        flush_after=True,
    ),
    ApplyKind(
        "agents",
        Agent,
        Agent.key,
        lambda org_id, key: Agent(org_id=org_id, key=key),
        Reconciler._write_agent,
        prepare=_read_lookup,
    ),
    ApplyKind(
        "profiles",
        IngressProfile,
        IngressProfile.profile_id,
        lambda org_id, key: IngressProfile(org_id=org_id, profile_id=key),
        Reconciler._write_profile,
    ),
    ApplyKind(
        "dashboards",
        Dashboard,
        Dashboard.name,
        lambda org_id, name: Dashboard(org_id=org_id, name=name),
        Reconciler._write_dashboard,
    ),
    ApplyKind(
        "waivers",
        WaiverRow,
        WaiverRow.key,
        lambda org_id, key: WaiverRow(org_id=org_id, key=key),
        Reconciler._write_waiver,
    ),
)
assert tuple(kind.name for kind in APPLY) == KINDS


class _Refused(Exception):
    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("refused")
        self.problems = problems


def _spec_digest(spec: SourceSpec) -> str:
    """What a stalled revision was validated with: a changed source definition retries it."""
    return hashlib.sha256(spec.model_dump_json().encode()).hexdigest()[:16]


def _hosted_directory(path: str) -> str | None:
    """The hosted product's directory beside the source's (`.driftgate` -> `.driftguard`);
    None when the source's directory is that one already."""
    path = path.rstrip("/")
    if path.rsplit("/", 1)[-1] == HOSTED_DIRECTORY:
        return None
    parent = path.rsplit("/", 1)[0] if "/" in path else ""
    return f"{parent}/{HOSTED_DIRECTORY}" if parent else HOSTED_DIRECTORY


def _remote(spec: SourceSpec) -> GitRemote:
    return GitRemote(
        url=spec.url,
        branch=spec.branch,
        token_env=spec.token_env,
        ssh_key_file=spec.ssh_key_file,
    )


def _singular(kind: str) -> str:
    return {
        "templates": "template",
        "watchSets": "watch set",
        "watches": "watch",
        "agents": "agent",
        "profiles": "consumer profile",
        "dashboards": "dashboard",
    }[kind]


def _api_templates(session: Session, org_id: str) -> dict[str, Template]:
    return {t.name: t for t in session.scalars(select(Template).where(Template.org_id == org_id))}


def _template_values(
    name: str | None,
    declared: Mapping[str, dict[str, Any]],
    api_templates: Mapping[str, Template],
    box: SecretBox,
) -> dict[str, Any]:
    if name is None:
        return {}
    if name in declared:
        return dict(declared[name])
    if name in api_templates:
        template = api_templates[name]
        return {
            "watch_type": template.watch_type,
            "url_pattern": template.url_pattern,
            "tags": list(template.tags or []),
            "headers": box.decrypt_json(template.headers_ciphertext)
            if template.headers_ciphertext
            else {},
        }
    system = SYSTEM_TEMPLATES[name]
    return {
        "watch_type": system.watch_type,
        "url_pattern": system.url_pattern,
        "tags": list(system.tags),
        "headers": {},
    }


def _watch_lookup(session: Session, org_id: str, refs: list[str]) -> dict[str, str]:
    """Watch references (name, id or URL) -> watch id, within one org."""
    if not refs:
        return {}
    wanted = list(dict.fromkeys(refs))
    rows = session.execute(
        select(Watch.id, Watch.name, Watch.url).where(
            Watch.org_id == org_id,
            or_(Watch.name.in_(wanted), Watch.id.in_(wanted), Watch.url.in_(wanted)),
        )
    ).all()
    lookup: dict[str, str] = {}
    for watch_id, _name, url in rows:
        lookup.setdefault(url, watch_id)
        lookup[watch_id] = watch_id
    for watch_id, name, _url in rows:
        lookup[name] = watch_id  # a name beats a URL that another watch also serves
    return lookup


def binding_conditions(bindings: list[AgentWatch]) -> list[dict[str, Any]]:
    """The agent's `WatchesResolved` condition, computed when read: a reference that points
    at nothing (never resolved, or its watch was deleted) fails the agent's preflight closed."""
    missing = [b.ref for b in bindings if b.watch_id is None]
    if not missing:
        return [
            {
                "type": cond.WATCHES_RESOLVED,
                "status": cond.TRUE,
                "reason": cond.RESOLVED,
                "message": "",
            }
        ]
    return [
        {
            "type": cond.WATCHES_RESOLVED,
            "status": cond.FALSE,
            "reason": cond.WATCH_NOT_FOUND,
            "message": "no watch matches: " + ", ".join(missing) + "; preflight blocks this agent",
            "refs": missing,
        }
    ]


def _condition(conditions: list[dict[str, Any]] | None, kind: str) -> dict[str, Any] | None:
    return next((c for c in conditions or [] if c.get("type") == kind), None)


def _status_of(conditions: list[dict[str, Any]], kind: str) -> str:
    found = _condition(conditions, kind)
    return str(found["status"]) if found else "Unknown"


def _set_condition(
    conditions: list[dict[str, Any]],
    kind: str,
    status: str,
    reason: str,
    message: str,
    now: datetime,
) -> list[dict[str, Any]]:
    """Set a condition; `lastTransitionTime` moves only when the status changes."""
    previous = _condition(conditions, kind)
    transition = (
        previous["lastTransitionTime"]
        if previous is not None and previous.get("status") == status
        else now.isoformat().replace("+00:00", "Z")
    )
    updated = {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": transition,
    }
    others = [c for c in conditions if c.get("type") != kind]
    order = cond.ORDER
    return sorted([*others, updated], key=lambda c: order.get(str(c.get("type")), 9))


def _set_applied(session: Session, name: str, revision: str, inventory: dict[str, Any]) -> None:
    session.execute(
        update(Source)
        .where(Source.name == name)
        .values(last_applied_revision=revision, last_applied_at=utcnow(), inventory=inventory)
        .execution_options(synchronize_session=False)
    )


@cache
def _load_code_digest() -> str:
    """The code that turns file bytes into checked data: the loader, the schemas, the YAML
    and pydantic libraries, and this driftgate."""
    try:
        digest = hashlib.sha256(Path(gitops_load.__file__).read_bytes())
    except OSError:  # no source to read: data checked by another process is not taken
        digest = hashlib.sha256(os.urandom(32))
    parts = [
        controller.__version__,
        yaml.__version__,
        str(yaml.__with_libyaml__),
        pydantic.VERSION,
        json.dumps([gitops_schema(name) for name in FILES], sort_keys=True, default=str),
    ]
    digest.update("\0".join(parts).encode())
    return digest.hexdigest()


def _json_native(value: Any) -> bool:
    """True when `value` comes back equal and of the same types from JSON."""
    if value is None or isinstance(value, str | bool | int):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_json_native(item) for item in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _json_native(v) for k, v in value.items())
    return False
