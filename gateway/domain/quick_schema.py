"""A quick validity check for the simple JSON Schemas most tools declare.

The gate checks every call's arguments against its tool's input schema (policy/engine.py). The
`jsonschema` validator walks a schema through its keyword dispatch on every call; for a flat
object schema that is most of the gate's own time per call. `compile_check(schema, dialect)`
turns a schema built only from the keywords below into a plain function, or returns None for any
other schema. The function's True means the arguments are valid exactly as `jsonschema` decides
it (tests/unit/test_quick_schema.py compares the two on generated schemas and values); its False
means "not known valid": the caller then asks `jsonschema` itself, which also words the errors.
So a gap here can cost time, never let invalid arguments through.

Understood: `type`, `properties`, `required`, `additionalProperties` (a boolean or a schema),
`items` (one schema), `minItems`, `maxItems`, `minLength`, `maxLength`, `minimum`, `maximum`,
`enum` of strings, boolean schemas, and annotations (`title`, `description`, `default`,
`examples`, `$comment`, `$schema`, `deprecated`, `readOnly`, `writeOnly`, `format` (only where
the validator has no format checker; the gateway's has one, gateway/domain/formats.py, so a schema
naming a format is left to `jsonschema`), and `x-` extensions). Dialects: draft 6
and later, where 1.0 is an integer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Check = Callable[[Any], bool]

DIALECTS = frozenset({"draft6", "draft7", "draft2019-09", "draft2020-12"})
_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "$comment", "$schema", "deprecated", "readOnly", "writeOnly"}
)
_FORMAT = "format"


def _is_integer(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_TYPES: dict[str, Check] = {
    "string": lambda v: isinstance(v, str),
    "integer": _is_integer,
    "number": _is_number,
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
}


class _Unsupported(Exception):
    pass


def compile_check(schema: Any, dialect: str, *, formats: bool = False) -> Check | None:
    """The quick check of `schema` (valid per its `dialect`), or None when it uses anything else.

    `formats`: the validator asserts `format`, so a schema that names one is left to it."""
    if dialect not in DIALECTS:
        return None
    try:
        if formats and _names_format(schema):
            return None
        return _compile(schema)
    except _Unsupported:
        return None


def _names_format(schema: Any) -> bool:
    """Whether `format` appears as a key anywhere (a property so named too: that only costs time)."""
    if isinstance(schema, Mapping):
        return _FORMAT in schema or any(_names_format(sub) for sub in schema.values())
    if isinstance(schema, list):
        return any(_names_format(sub) for sub in schema)
    return False


def _compile(schema: Any) -> Check:
    if schema is True:
        return lambda value: True
    if schema is False:
        return lambda value: False
    if not isinstance(schema, Mapping):
        raise _Unsupported
    checks: list[Check] = []
    for key in schema:
        if not isinstance(key, str):
            raise _Unsupported
        if key in _ANNOTATIONS or key == _FORMAT or key.startswith("x-"):
            continue
        if key not in _KEYWORDS:
            raise _Unsupported
    if "type" in schema:
        checks.append(_type(schema["type"]))
    if "enum" in schema:
        checks.append(_enum(schema["enum"]))
    if "minLength" in schema or "maxLength" in schema:
        checks.append(_length(schema.get("minLength"), schema.get("maxLength")))
    if "minimum" in schema or "maximum" in schema:
        checks.append(_bounds(schema.get("minimum"), schema.get("maximum")))
    if {"properties", "required", "additionalProperties"} & schema.keys():
        checks.append(
            _object(schema.get("properties", {}), schema.get("required", []), schema.get("additionalProperties", True))
        )
    if {"items", "minItems", "maxItems"} & schema.keys():
        checks.append(_array(schema.get("items", True), schema.get("minItems"), schema.get("maxItems")))
    if not checks:
        return lambda value: True
    if len(checks) == 1:
        return checks[0]
    return lambda value: all(check(value) for check in checks)


_KEYWORDS = frozenset(
    {
        "type",
        "enum",
        "minLength",
        "maxLength",
        "minimum",
        "maximum",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "minItems",
        "maxItems",
    }
)


def _type(declared: Any) -> Check:
    names = [declared] if isinstance(declared, str) else declared
    if not isinstance(names, list) or not names or any(not isinstance(n, str) or n not in _TYPES for n in names):
        raise _Unsupported
    if len(names) == 1:
        return _TYPES[names[0]]
    tests = [_TYPES[n] for n in names]
    return lambda value: any(test(value) for test in tests)


def _enum(values: Any) -> Check:
    if not isinstance(values, list) or not values or any(not isinstance(v, str) for v in values):
        raise _Unsupported
    allowed = frozenset(values)
    return lambda value: isinstance(value, str) and value in allowed


def _whole(bound: Any) -> int | None:
    if bound is None:
        return None
    if not _is_integer(bound) or bound < 0:
        raise _Unsupported
    return int(bound)


def _length(low: Any, high: Any) -> Check:
    least, most = _whole(low), _whole(high)

    def check(value: Any) -> bool:
        if not isinstance(value, str):
            return True
        n = len(value)
        return (least is None or n >= least) and (most is None or n <= most)

    return check


def _bounds(low: Any, high: Any) -> Check:
    for bound in (low, high):
        if bound is not None and not _is_number(bound):
            raise _Unsupported

    def check(value: Any) -> bool:
        if not _is_number(value):
            return True
        return (low is None or value >= low) and (high is None or value <= high)

    return check


def _object(properties: Any, required: Any, additional: Any) -> Check:
    if not isinstance(properties, Mapping) or not isinstance(required, list):
        raise _Unsupported
    if any(not isinstance(name, str) for name in required):
        raise _Unsupported
    named = {name: _compile(sub) for name, sub in properties.items() if isinstance(name, str)}
    if len(named) != len(properties):
        raise _Unsupported
    needed = tuple(required)
    extra: Check | None = None if additional is True else _compile(additional)

    def check(value: Any) -> bool:
        if not isinstance(value, dict):
            return True
        for name in needed:
            if name not in value:
                return False
        for name, item in value.items():
            sub = named.get(name)
            if sub is not None:
                if not sub(item):
                    return False
            elif extra is not None and not extra(item):
                return False
        return True

    return check


def _array(items: Any, low: Any, high: Any) -> Check:
    each = _compile(items)
    least, most = _whole(low), _whole(high)

    def check(value: Any) -> bool:
        if not isinstance(value, list):
            return True
        n = len(value)
        if (least is not None and n < least) or (most is not None and n > most):
            return False
        return all(each(item) for item in value)

    return check
