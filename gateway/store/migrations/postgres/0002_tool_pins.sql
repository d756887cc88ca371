-- Warrant store (PostgreSQL), version 2: pinned downstream tool definitions. Gateway-wide (no tenant): every
-- tenant's runs call the same downstream tools.

CREATE TABLE tool_pins (
    tool               TEXT PRIMARY KEY,                     -- the exposed name
    adapter            TEXT NOT NULL,
    definition_sha256  TEXT NOT NULL,
    definition         TEXT NOT NULL,                        -- canonical JSON: name, description, input_schema, annotations
    pinned_by          TEXT NOT NULL,                        -- first_use, or the accepting key as tenant/name
    pinned_at          DOUBLE PRECISION NOT NULL,
    previous_sha256    TEXT                                  -- the pin this one replaced
);

-- Adapters configured `pin: first_use` whose first listing has been pinned: a tool they list
-- later is new, and waits for an operator.
CREATE TABLE tool_pin_adapters (
    adapter            TEXT PRIMARY KEY,
    first_pinned_at    DOUBLE PRECISION NOT NULL
);
