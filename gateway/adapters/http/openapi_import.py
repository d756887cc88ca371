"""An OpenAPI 3.0/3.1 document → a `kind: http` adapter document, as a draft for a person to review.

Pure: the parsed document in; the adapter document, its comments and the list of things to review
out (`import_openapi`). No I/O: `gateway/cli/adapters.py` reads the document and writes the YAML.

Per operation, in order of path then method:
  - `operationId` → the tool's name; one that breaks TOOL_NAME or the catalog's 48-character
    exposed-name limit is converted (camelCase → snake_case, other characters → `_`) and the
    original noted; an operation without one is named from its method and path;
  - path and query parameters and the JSON request body → one object input schema: `$ref`s
    inlined, OpenAPI 3.0's `nullable` and boolean exclusive bounds made JSON Schema, readOnly body
    properties dropped; a parameter and a body property of one name become one property, the
    parameter's; a path placeholder that is not an identifier is renamed in path and schema; the
    query parameters of a POST/PUT/PATCH go to `query:`, the body of a DELETE to `body:`;
  - GET/HEAD → read; any other method → write, with `timeout: 10`, `idempotency_header` when the
    operation declares an `Idempotency-Key` header, `receipt_id: id` when its 2xx JSON response
    has an `id`, and for a keyed write with a receipt a guessed `lookup`: the GET whose path has
    exactly one parameter naming a key (`/contacts/by-key/{key}`), the one under the write's own
    resource where there are several (a hidden one counts: lookups are the gateway's, not tools);
  - header and cookie parameters other than Idempotency-Key are left out: credentials belong in
    the adapter's `headers:` as `${ENV}` references, never in the tool's arguments.
Operations under `/_admin`, marked `x-internal` / `x-warrant-skip: true`, with a method the http
adapter does not send (OPTIONS, TRACE), or whose body is not a JSON object are skipped and listed.

Not in an OpenAPI document, so guessed or left to the reviewer: `key_retention` (24h where a lookup
needs one), whether a lookup really answers 404 for an unseen key, the auth headers' values,
receipts nested deeper than a top-level `id`, bodies that are not objects (oneOf, arrays).

Errors:

    ConfigError
    └── OpenApiError        .code, .details
        ├── not_openapi     not an OpenAPI 3.0/3.1 document with `paths`
        ├── invalid_name    the adapter name breaks the catalog's ADAPTER_NAME (or is `warrant`)
        ├── no_base_url     no absolute `servers[0].url`, no `--base-url`, no URL to resolve against
        ├── bad_ref         a `$ref` outside this document, or to nothing (details: ref)
        ├── ref_cycle       a `$ref` that leads back to itself (details: cycle, operation)
        └── no_tools        no operation left to import
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urljoin

from gateway.errors import ConfigError
from gateway.names import ADAPTER_NAME, RESERVED_PREFIX

TOOL_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
MAX_EXPOSED = 48  # the catalog's EXPOSED_NAME: `<adapter>__<tool>` is at most 48 characters
WRITE_TIMEOUT = 10
IDEMPOTENCY_HEADER = "Idempotency-Key"
KEY_ARGUMENT = "idempotency_key"  # the adapter's placeholder for the gateway's key: no argument may take it
METHODS = ("delete", "get", "head", "options", "patch", "post", "put", "trace")  # sorted: the stable order
UNSUPPORTED_METHODS = frozenset({"options", "trace"})  # the http adapter does not send them
READ_METHODS = frozenset({"get", "head"})
KEY_RETENTION = "how long the destination remembers idempotency keys is not in the document: set it"
GUESSED_RETENTION = "24h"
NO_KEY = "a write without an idempotency key cannot be deduplicated by the destination: review"

_TEMPLATE = re.compile(r"\{([^{}]+)\}")
_DROPPED_KEYWORDS = frozenset({"discriminator", "xml", "externalDocs", "example", "nullable"})
_BODY_KEYWORDS = frozenset(
    {"type", "properties", "required", "additionalProperties", "allOf", "title", "description", "$schema", "$id"}
)
_SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SUBSCHEMA = ("items", "not", "additionalProperties", "contains", "if", "then", "else")


class OpenApiError(ConfigError):
    """The document cannot be imported; `code` says why (the module docstring lists them)."""

    def __init__(self, code: str, message: str, **details: Any) -> None:
        super().__init__(f"[{code}] {message}")
        self.code = code
        self.details = details


@dataclass(frozen=True)
class Note:
    """A comment above one tool: what was inferred or left out. Codes in REVIEW are also reviews."""

    code: str  # renamed | name_clash | reserved | no_idempotency_key | guessed_lookup | no_lookup | left_out |
    #            renamed_parameter | undeclared_path_parameter | optional_body | body_keywords | no_receipt_id
    text: str


REVIEW = frozenset({"renamed", "name_clash", "reserved", "no_idempotency_key", "guessed_lookup", "no_lookup"})


@dataclass(frozen=True)
class Review:
    """One thing a person must check before the adapter is used."""

    code: str  # a Note code in REVIEW, or key_retention
    tool: str | None  # the tool's name in the adapter; None for the adapter as a whole
    message: str


@dataclass(frozen=True)
class Skipped:
    method: str  # upper case
    path: str
    reason: str  # admin_path | internal | warrant_skip | unsupported_method | body_not_json | body_not_object |
    #              body_on_read


@dataclass
class ImportedTool:
    name: str
    method: str  # upper case
    path: str
    write: bool
    definition: dict[str, Any]
    notes: list[Note] = field(default_factory=list)


@dataclass(frozen=True)
class ImportResult:
    adapter: str
    document: dict[str, Any]  # the adapter document, as `yaml.safe_load(render(result))` gives it back
    tools: tuple[ImportedTool, ...]
    skipped: tuple[Skipped, ...]
    header: tuple[str, ...]  # comment lines above the document
    left_out: tuple[str, ...]  # header and cookie parameters not in any input schema: "name (in)"
    auth_header: str  # the commented `headers:` example, from the document's security scheme

    @property
    def reviews(self) -> list[Review]:
        found = [Review(n.code, t.name, n.text) for t in self.tools for n in t.notes if n.code in REVIEW]
        if "key_retention" in self.document:
            found.append(Review("key_retention", None, KEY_RETENTION))
        return found

    @property
    def reads(self) -> int:
        return sum(1 for t in self.tools if not t.write)

    @property
    def writes(self) -> int:
        return sum(1 for t in self.tools if t.write)

    def summary(self) -> list[str]:
        """What the command prints to stderr: the counts, then one line per thing to review."""
        lines = [f"{self.adapter}: {len(self.tools)} tools ({self.reads} reads, {self.writes} writes)"]
        if self.skipped:
            lines[0] += f"; {len(self.skipped)} operations skipped (listed at the end of the draft)"
        if self.reviews:
            lines.append("review:")
            for review in self.reviews:
                where = f"{self.adapter}__{review.tool}" if review.tool else self.adapter
                lines.append(f"  {where}: {review.message}")
        return lines


def import_openapi(
    spec: Any,
    *,
    name: str,
    source: str,
    generated_at: str,
    base_url: str | None = None,
    spec_url: str | None = None,
) -> ImportResult:
    """Build the adapter `name` from the parsed OpenAPI document `spec`.

    `source` and `generated_at` only go into the header comment. `base_url` overrides the
    document's servers; `spec_url`, where the document was fetched from, resolves a relative one.

    Raises:
        OpenApiError: see the module docstring for the codes.
    """
    if not ADAPTER_NAME.fullmatch(name) or f"{name}__".startswith(RESERVED_PREFIX):
        raise OpenApiError("invalid_name", f"adapter name {name!r} must match {ADAPTER_NAME.pattern}", name=name)
    if not isinstance(spec, dict) or not str(spec.get("openapi", "")).startswith(("3.0", "3.1")):
        raise OpenApiError("not_openapi", "not an OpenAPI 3.0 or 3.1 document (no `openapi: 3.x`)")
    if not isinstance(spec.get("paths"), dict):
        raise OpenApiError("not_openapi", "the document has no `paths`")
    refs = _Refs(spec, legacy=str(spec["openapi"]).startswith("3.0"))
    base = _base_url(spec, base_url, spec_url)
    max_tool = MAX_EXPOSED - len(name) - 2

    operations, skipped = _operations(spec, refs)
    tools: list[ImportedTool] = []
    left_out: list[str] = []
    used: set[str] = set()
    for op in operations:
        if op.skip:
            continue
        tool = _tool(op, refs, max_tool, used, left_out)
        if isinstance(tool, Skipped):
            skipped.append(tool)
            continue
        used.add(tool.name)
        tools.append(tool)
    if not tools:
        raise OpenApiError("no_tools", "no operation left to import", skipped=len(skipped))
    _propose_lookups(tools, operations)
    skipped.sort(key=lambda s: (s.path, s.method))

    document: dict[str, Any] = {"name": name, "kind": "http", "base_url": base}
    if any("lookup" in t.definition for t in tools):
        document["key_retention"] = GUESSED_RETENTION  # the loader requires it with a lookup: a guess, reviewed
    document["tools"] = {t.name: t.definition for t in tools}
    info = _dict(spec.get("info"))
    title = f"{info.get('title', 'untitled')} {info.get('version', '')}".strip()
    header = [
        f"Generated by `warrant adapters import-openapi` from {source}",
        f"({title}, OpenAPI {spec['openapi']}) at {generated_at}.",
        "A draft for a person to review: check every tool, schema, lookup and note below before use.",
        "Policies must still name each tool, or the gateway refuses it (fail closed). Suggested policies/ snippet:",
        "  tools:",
        *(f"    {name}__{t.name}: {{effect: {'write' if t.write else 'read'}}}" for t in tools),
    ]
    auth = _auth_header(spec, name)
    return ImportResult(name, document, tuple(tools), tuple(skipped), tuple(header), tuple(left_out), auth)


# -- operations ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Operation:
    method: str  # lower case
    path: str
    op: dict[str, Any]
    parameters: tuple[dict[str, Any], ...]  # resolved; the path item's merged under the operation's
    skip: str | None  # why it is not imported, if it is not


def _operations(spec: dict[str, Any], refs: _Refs) -> tuple[list[_Operation], list[Skipped]]:
    """Every operation (skipped ones included: a hidden by-key GET may still serve as a lookup)."""
    operations: list[_Operation] = []
    skipped: list[Skipped] = []
    for path in sorted(p for p in spec["paths"] if isinstance(p, str)):
        item = _dict(refs.shallow(spec["paths"][path]))
        shared = _parameters(item.get("parameters"), refs)
        for method in METHODS:
            op = item.get(method)
            if not isinstance(op, dict):
                continue
            parameters = {**shared, **_parameters(op.get("parameters"), refs)}
            reason = _skip_reason(path, method, item, op)
            operations.append(_Operation(method, path, op, tuple(parameters.values()), reason))
            if reason:
                skipped.append(Skipped(method.upper(), path, reason))
    return operations, skipped


def _skip_reason(path: str, method: str, item: dict[str, Any], op: dict[str, Any]) -> str | None:
    if method in UNSUPPORTED_METHODS:
        return "unsupported_method"
    if path == "/_admin" or path.startswith("/_admin/"):
        return "admin_path"
    if op.get("x-internal") is True or item.get("x-internal") is True or "x-internal" in _list(op.get("tags")):
        return "internal"
    if op.get("x-warrant-skip") is True or item.get("x-warrant-skip") is True:
        return "warrant_skip"
    return None


def _parameters(raw: Any, refs: _Refs) -> dict[tuple[str, str], dict[str, Any]]:
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for entry in raw if isinstance(raw, list) else []:
        param = _dict(refs.shallow(entry))
        if isinstance(param.get("name"), str) and isinstance(param.get("in"), str):
            found[(param["in"], param["name"])] = param
    return found


def _tool(
    operation: _Operation,
    refs: _Refs,
    max_tool: int,
    used: set[str],
    left_out: list[str],
) -> ImportedTool | Skipped:
    method, path, op = operation.method, operation.path, operation.op
    where = f"{method.upper()} {path}"
    name, notes = _name(op.get("operationId"), method, path, max_tool, used)
    write = method not in READ_METHODS
    try:
        inputs = _inputs(operation, refs, left_out)
    except _SkipOperation as skip:
        return Skipped(method.upper(), path, skip.reason)
    except OpenApiError as exc:
        if exc.code != "ref_cycle":
            raise
        cycle = " → ".join(exc.details["cycle"])
        message = f"{where}: a $ref cycle cannot be inlined: {cycle}"
        raise OpenApiError("ref_cycle", message, cycle=exc.details["cycle"], operation=where) from None
    notes += inputs.notes
    definition: dict[str, Any] = {"description": _description(op, where), "method": method.upper()}
    definition["path"] = inputs.path
    definition["input_schema"] = inputs.schema
    # The adapter sends what the path does not take as the body of POST, PUT and PATCH, else as the query.
    if method in ("post", "put", "patch") and inputs.query:
        definition["query"] = inputs.query
    if method == "delete" and inputs.body:
        definition["body"] = inputs.body
    if write:
        definition["timeout"] = WRITE_TIMEOUT
        if inputs.keyed:
            definition["idempotency_header"] = IDEMPOTENCY_HEADER
        else:
            notes.append(Note("no_idempotency_key", NO_KEY))
        if "id" in _response_properties(op, refs):
            definition["receipt_id"] = "id"
        else:
            notes.append(
                Note("no_receipt_id", "no `id` in the 2xx response: set receipt_id to the field naming the object")
            )
    return ImportedTool(name, method.upper(), inputs.path, write, definition, notes)


def _description(op: dict[str, Any], where: str) -> str:
    parts = [op[k].strip() for k in ("summary", "description") if isinstance(op.get(k), str) and op[k].strip()]
    if len(parts) == 2 and parts[0] == parts[1]:
        parts = parts[:1]
    return "\n\n".join(parts) or where


# -- names --------------------------------------------------------------------------------------


def _name(operation_id: Any, method: str, path: str, max_tool: int, used: set[str]) -> tuple[str, list[Note]]:
    """The tool's name and, when it is not the operationId as written, a note saying why."""
    notes: list[Note] = []
    if isinstance(operation_id, str) and operation_id:
        fits = TOOL_NAME.fullmatch(operation_id) is not None and len(operation_id) <= max_tool
        name = operation_id if fits else _snake(operation_id)
        if not fits:
            text = f"renamed from operationId {operation_id!r} (lower snake case, at most {max_tool} characters)"
            notes.append(Note("renamed", text))
    else:
        words = [f"by_{m.group(1)}" if (m := _TEMPLATE.fullmatch(s)) else s for s in path.split("/") if s]
        name = _snake("_".join([method, *words]) if words else f"{method}_root")
        notes.append(Note("renamed", "no operationId: named from the method and path"))
    if len(name) > max_tool:  # a short digest of the original keeps two long names apart
        digest = hashlib.sha256(str(operation_id or f"{method} {path}").encode()).hexdigest()[:6]
        name = f"{name[: max_tool - 7].rstrip('_')}_{digest}"
    if name in used:
        base, n = name, 2
        while name in used:
            suffix = f"_{n}"
            name, n = f"{base[: max_tool - len(suffix)]}{suffix}", n + 1
        notes.append(Note("renamed", f"{base!r} is taken by an earlier operation: renamed"))
    return name, notes


def _snake(text: str) -> str:
    """camelCase and anything else → lower snake case starting with a letter."""
    text = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", text)
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", text)
    text = re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").lower()
    return text if text[:1].isalpha() else f"op_{text}".rstrip("_")


# -- the input schema ---------------------------------------------------------------------------


class _SkipOperation(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class _Inputs:
    schema: dict[str, Any]
    path: str  # the operation's path, placeholders renamed where a parameter's name is not an identifier
    notes: list[Note]
    keyed: bool  # the operation declares an Idempotency-Key header
    query: list[str]  # the arguments that are query parameters
    body: list[str]  # the arguments that are body properties


def _inputs(operation: _Operation, refs: _Refs, left_out: list[str]) -> _Inputs:
    """Path, query and body inputs as one object schema. Header and cookie parameters are added to
    `left_out`.

    Raises:
        _SkipOperation: the body is not a JSON object, or comes with a GET or HEAD.
    """
    inputs = _Inputs({}, operation.path, [], False, [], [])
    properties: dict[str, Any] = {}
    required: list[str] = []
    place_of: dict[str, str] = {}
    dropped: list[str] = []
    templates = _TEMPLATE.findall(operation.path)
    renamed = {t: _identifier(t) for t in templates}

    def add(name: str, schema: Any, place: str) -> bool:
        what = "body property" if place == "body" else f"{place} parameter"
        if name in properties:
            text = f"`{name}` is the {place_of[name]} input and a {what}: the input keeps the first"
            inputs.notes.append(Note("name_clash", text))
        elif name == KEY_ARGUMENT:
            inputs.notes.append(Note("reserved", f"the {what} `{name}` is left out: the name is reserved"))
        else:
            properties[name] = schema
            place_of[name] = place
            return True
        return False

    # Path parameters first (in template order), then query: a name in both keeps the path's.
    ordered = sorted(
        operation.parameters,
        key=lambda p: (0, templates.index(p["name"])) if p["in"] == "path" and p["name"] in templates else (1, 0),
    )
    for param in ordered:
        place, name = param["in"], param["name"]
        if place == "path" and name in renamed:
            name = renamed[name]
        if place == "path" and param["name"] not in templates:
            continue  # declared, but the path has no such placeholder: nothing would carry it
        if place == "header" and name.lower() == IDEMPOTENCY_HEADER.lower():
            inputs.keyed = True
        elif place not in ("path", "query"):
            dropped.append(f"{name} ({place})")
        elif add(name, _parameter_schema(param, refs), place) and (place == "path" or param.get("required") is True):
            required.append(name)
    for template, name in renamed.items():
        if name != template:
            inputs.path = inputs.path.replace(f"{{{template}}}", f"{{{name}}}")
            inputs.notes.append(Note("renamed_parameter", f"path parameter `{template}` is the argument `{name}`"))
        if name not in properties:
            properties[name] = {"type": "string"}
            place_of[name] = "path"
            required.append(name)
            text = f"path parameter `{template}` is not declared in the document: typed as a string"
            inputs.notes.append(Note("undeclared_path_parameter", text))
    if dropped:
        text = f"left out (header/cookie parameters come from the adapter's headers:): {', '.join(dropped)}"
        inputs.notes.append(Note("left_out", text))
        left_out.extend(h for h in dropped if h not in left_out)

    body = _request_body(operation.op, refs)
    extra: dict[str, Any] = {}
    if body is not None:
        if operation.method in READ_METHODS:
            raise _SkipOperation("body_on_read")
        schema, body_required = body
        body_properties, body_required_names, extra, lost = _object_parts(schema)
        if lost:
            text = f"not carried over from the body schema (check the input): {', '.join(dict.fromkeys(lost))}"
            inputs.notes.append(Note("body_keywords", text))
        for name, sub in body_properties.items():
            add(name, sub, "body")
        required += [n for n in dict.fromkeys(body_required_names) if n in properties and n not in required]
        if body_required_names and not body_required:
            text = "the document marks the request body optional; its required properties are required here"
            inputs.notes.append(Note("optional_body", text))
    inputs.schema = {"type": "object", "properties": properties}
    if required:
        inputs.schema["required"] = required
    inputs.schema.update(extra)
    inputs.query = [n for n, place in place_of.items() if place == "query"]
    inputs.body = [n for n, place in place_of.items() if place == "body"]
    return inputs


def _identifier(name: str) -> str:
    """A path parameter's name as the adapter's placeholder and argument: `[A-Za-z_][A-Za-z0-9_]*`."""
    text = re.sub(r"[^A-Za-z0-9_]", "_", name)
    text = text if re.match(r"[A-Za-z_]", text) else f"p_{text}"
    return f"{text}_value" if text == KEY_ARGUMENT else text


def _parameter_schema(param: dict[str, Any], refs: _Refs) -> Any:
    schema = param.get("schema")
    if schema is None:  # `content` instead of `schema`: one media type
        media = _dict(param.get("content"))
        schema = _dict(media[min(media)]).get("schema") if media else None
    cleaned = _clean(refs.deep(schema if schema is not None else {}), refs.legacy)
    if isinstance(cleaned, dict) and isinstance(param.get("description"), str) and "description" not in cleaned:
        cleaned["description"] = param["description"]
    return cleaned


def _request_body(op: dict[str, Any], refs: _Refs) -> tuple[dict[str, Any], bool] | None:
    if "requestBody" not in op:
        return None
    body = _dict(refs.shallow(op["requestBody"]))
    content = _dict(body.get("content"))
    if not content:
        return None
    media = _json_media(content)
    if media is None:
        raise _SkipOperation("body_not_json")
    schema = _clean(refs.deep(_dict(content[media]).get("schema", {})), refs.legacy)
    return _dict(schema), body.get("required") is True


def _json_media(content: dict[str, Any]) -> str | None:
    if "application/json" in content:
        return "application/json"
    candidates = sorted(m for m in content if isinstance(m, str) and re.fullmatch(r"[\w.-]+/([\w.-]+\+)?json", m))
    return candidates[0] if candidates else None


def _object_parts(
    schema: dict[str, Any], top: bool = True
) -> tuple[dict[str, Any], list[str], dict[str, Any], list[str]]:
    """Properties, required names, `additionalProperties: false` and the keywords not carried over
    of an object schema (allOf merged).

    Raises:
        _SkipOperation: the schema is not an object with properties.
    """
    kind = schema.get("type")
    properties: dict[str, Any] = {}
    required: list[str] = []
    lost = sorted(k for k in schema if k not in _BODY_KEYWORDS)
    for part in _list(schema.get("allOf")):
        part_properties, part_required, _, part_lost = _object_parts(_dict(part), top=False)
        properties.update(part_properties)
        required += part_required
        lost += part_lost
    is_object = kind == "object" or (isinstance(kind, list) and "object" in kind) or "properties" in schema
    if top and not (is_object or "allOf" in schema):
        raise _SkipOperation("body_not_object")
    properties.update(_dict(schema.get("properties")))
    required += [n for n in _list(schema.get("required")) if isinstance(n, str)]
    if top and not properties:
        raise _SkipOperation("body_not_object")
    extra = {"additionalProperties": False} if top and schema.get("additionalProperties") is False else {}
    return properties, required, extra, lost


def _clean(schema: Any, legacy: bool) -> Any:
    """OpenAPI's schema dialect → JSON Schema for validating arguments: 3.0 `nullable` and boolean
    exclusive bounds converted, readOnly properties dropped (the server sets them), OpenAPI-only
    keywords and `x-` extensions removed."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    read_only: set[str] = set()
    for key, value in schema.items():
        if not isinstance(key, str) or key in _DROPPED_KEYWORDS or key.startswith("x-"):
            continue
        if key == "properties" and isinstance(value, dict):
            read_only = {k for k, v in value.items() if isinstance(v, dict) and v.get("readOnly") is True}
            out[key] = {k: _clean(v, legacy) for k, v in value.items() if k not in read_only}
        elif key in ("patternProperties", "$defs", "dependentSchemas") and isinstance(value, dict):
            out[key] = {k: _clean(v, legacy) for k, v in value.items()}
        elif key in _SUBSCHEMA_LISTS and isinstance(value, list):
            out[key] = [_clean(v, legacy) for v in value]
        elif key in _SUBSCHEMA:
            out[key] = _clean(value, legacy)
        else:
            out[key] = value
    if read_only and isinstance(out.get("required"), list):
        out["required"] = [n for n in out["required"] if n not in read_only]
        if not out["required"]:
            del out["required"]
    if schema.get("nullable") is True:
        if isinstance(out.get("type"), str):
            out["type"] = [out["type"], "null"]
        if isinstance(out.get("enum"), list) and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
    if legacy:
        for exclusive, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
            if isinstance(out.get(exclusive), bool):
                if out.pop(exclusive) and bound in out:
                    out[exclusive] = out.pop(bound)
    return out


# -- writes: receipts and lookups ---------------------------------------------------------------


def _response_properties(op: dict[str, Any], refs: _Refs) -> set[str]:
    """The top-level property names of the first 2xx JSON response (shallow: cycles do not matter)."""
    responses = _dict(op.get("responses"))
    for code in sorted(responses, key=str):
        if not re.fullmatch(r"2(\d\d|XX)", str(code), re.IGNORECASE):
            continue
        content = _dict(_dict(refs.shallow(responses[code])).get("content"))
        media = _json_media(content)
        if media is not None:
            names = _property_names(_dict(content[media]).get("schema"), refs, depth=0)
            if names:
                return names
    return set()


def _property_names(schema: Any, refs: _Refs, depth: int) -> set[str]:
    schema = _dict(refs.shallow(schema))
    names = {n for n in _dict(schema.get("properties")) if isinstance(n, str)}
    if depth < 8:  # allOf of allOf ... of itself must end
        for part in _list(schema.get("allOf")):
            names |= _property_names(part, refs, depth + 1)
    return names


def _propose_lookups(tools: list[ImportedTool], operations: list[_Operation]) -> None:
    """For each keyed write, guess the GET that tells whether an operation with a key happened."""
    candidates = sorted(
        {
            op.path
            for op in operations
            if op.method == "get"
            and "requestBody" not in op.op
            and len(names := _TEMPLATE.findall(op.path)) == 1
            and "key" in names[0].lower()
        }
    )
    for tool in tools:
        if not tool.write or "idempotency_header" not in tool.definition:
            continue
        chosen = _closest(tool.path, candidates)
        if chosen is None or "receipt_id" not in tool.definition:
            why = "no by-key GET fits" if chosen is None else "a lookup needs receipt_id"
            tool.notes.append(
                Note("no_lookup", f"no lookup ({why}): an unknown outcome of this write needs an operator")
            )
            continue
        tool.definition["lookup"] = {"method": "GET", "path": _TEMPLATE.sub(f"{{{KEY_ARGUMENT}}}", chosen)}
        text = f"lookup guessed from GET {chosen}: check it answers 2xx for a key it saw, 404 for one it did not"
        tool.notes.append(Note("guessed_lookup", text))


def _closest(path: str, candidates: list[str]) -> str | None:
    """The candidate sharing the most leading path segments with `path`: the only one there is,
    or the one that shares at least one segment and more than any other."""
    if len(candidates) == 1:
        return candidates[0]
    segments = [s for s in path.split("/") if s]

    def shared(candidate: str) -> int:
        count = 0
        for mine, theirs in zip(segments, [s for s in candidate.split("/") if s], strict=False):
            if mine != theirs or _TEMPLATE.fullmatch(mine):
                break
            count += 1
        return count

    scores = {c: shared(c) for c in candidates}
    best = max(scores.values(), default=0)
    winners = [c for c, score in scores.items() if score == best]
    return winners[0] if best > 0 and len(winners) == 1 else None


# -- the document: refs, servers ----------------------------------------------------------------


class _Refs:
    """Local `$ref`s (`#/components/...`) of one document."""

    def __init__(self, spec: dict[str, Any], legacy: bool) -> None:
        self.spec = spec
        self.legacy = legacy  # OpenAPI 3.0: its schema dialect differs from JSON Schema

    def target(self, ref: Any) -> Any:
        if not isinstance(ref, str) or not ref.startswith("#/"):
            raise OpenApiError("bad_ref", f"only references inside the document are followed: {ref!r}", ref=ref)
        node: Any = self.spec
        for raw in ref[2:].split("/"):
            part = unquote(raw).replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                raise OpenApiError("bad_ref", f"{ref} names nothing in the document", ref=ref)
        return node

    def shallow(self, node: Any) -> Any:
        """`node` with the `$ref`s at its top followed (sibling keys kept over the target's)."""
        chain: tuple[str, ...] = ()
        while isinstance(node, dict) and "$ref" in node:
            chain = self._enter(chain, node["$ref"])
            target = self.target(node["$ref"])
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            node = {**target, **siblings} if siblings and isinstance(target, dict) else target
        return node

    def deep(self, node: Any, chain: tuple[str, ...] = ()) -> Any:
        """A fresh copy of `node` with every `$ref` inlined.

        Raises:
            OpenApiError: `ref_cycle` (details: cycle) or `bad_ref`.
        """
        if isinstance(node, list):
            return [self.deep(v, chain) for v in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            inner = self._enter(chain, node["$ref"])
            resolved = self.deep(self.target(node["$ref"]), inner)
            siblings = {k: self.deep(v, chain) for k, v in node.items() if k != "$ref"}
            return {**resolved, **siblings} if siblings and isinstance(resolved, dict) else resolved
        return {k: self.deep(v, chain) for k, v in node.items()}

    @staticmethod
    def _enter(chain: tuple[str, ...], ref: Any) -> tuple[str, ...]:
        if isinstance(ref, str) and ref in chain:
            cycle = [*chain[chain.index(ref) :], ref]
            raise OpenApiError("ref_cycle", f"a $ref cycle: {' → '.join(cycle)}", cycle=cycle)
        return (*chain, str(ref))


def _auth_header(spec: dict[str, Any], adapter: str) -> str:
    """`Header: "value with ${ENV}"` for the first security scheme that is a header; bearer by default."""
    schemes = _dict(_dict(spec.get("components")).get("securitySchemes"))
    wanted = [n for requirement in _list(spec.get("security")) for n in _dict(requirement)]
    env = adapter.upper()
    for scheme_name in [*wanted, *sorted(schemes)]:
        scheme = _dict(schemes.get(scheme_name))
        kind, how = scheme.get("type"), str(scheme.get("scheme", "")).lower()
        if kind == "apiKey" and scheme.get("in") == "header" and isinstance(scheme.get("name"), str):
            return f'{scheme["name"]}: "${{{env}_API_KEY}}"'
        if kind == "http" and how == "basic":
            return f'Authorization: "Basic ${{{env}_BASIC}}"'
        if kind == "http" and how == "bearer":
            break
    return f'Authorization: "Bearer ${{{env}_TOKEN}}"'


def _base_url(spec: dict[str, Any], override: str | None, spec_url: str | None) -> str:
    if override:
        url = override
    else:
        servers = spec.get("servers")
        first = _dict(servers[0]) if isinstance(servers, list) and servers else {}
        url = str(first.get("url") or "")
        variables = _dict(first.get("variables"))
        url = _TEMPLATE.sub(lambda m: str(_dict(variables.get(m.group(1))).get("default", m.group(0))), url)
        if not re.match(r"https?://", url) and spec_url:
            url = urljoin(spec_url, url or "/")
    if not re.fullmatch(r"https?://[^/?#@{}\s]+(/[^?#{}\s]*)?", url):  # no credentials, query or fragment
        raise OpenApiError("no_base_url", f"no absolute base URL (servers[0].url is {url!r}): pass --base-url", url=url)
    return url.rstrip("/")


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
