-- Warrant store, version 18: MCP authorization (issue 21, docs/authorization.md).
--
-- Warrant is the OAuth 2.1 authorization server of its own /mcp. Clients register (RFC 7591, or
-- by a Client ID Metadata Document: `kind`), a person consents in the console to one run, and the
-- consent is a grant: the run it acts for, the lease the gateway holds for it (its token derived
-- from `salt`, never stored; its hash is the lease's row in `leases`) and the authorization code
-- that redeems it once. Access and refresh tokens are stored only as their SHA-256; a refresh token
-- is marked used when it rotates, so a second use is seen (and revokes the grant).
CREATE TABLE IF NOT EXISTS oauth_clients (
    client_id     TEXT PRIMARY KEY,
    kind          TEXT NOT NULL,                 -- registered | metadata_document
    metadata      TEXT NOT NULL,                 -- the client's metadata (JSON), never a secret
    created_at    REAL NOT NULL,
    used_at       REAL                           -- its last consent; unused registrations are pruned
);
CREATE TABLE IF NOT EXISTS oauth_grants (
    grant_id          TEXT PRIMARY KEY,
    tenant            TEXT NOT NULL,
    run_id            TEXT NOT NULL REFERENCES runs (run_id),
    client_id         TEXT NOT NULL,
    client_name       TEXT,
    granted_by        TEXT NOT NULL,             -- the consenting key's name
    key_id            TEXT,                      -- the consenting key (a store key; NULL: configured)
    epoch             INTEGER NOT NULL,          -- the lease epoch the grant holds
    salt              TEXT NOT NULL,
    lease_token_hash  TEXT NOT NULL,
    resource          TEXT NOT NULL,             -- RFC 8707: the only resource its tokens are for
    scopes            TEXT NOT NULL,
    code_hash         TEXT NOT NULL UNIQUE,
    code_challenge    TEXT NOT NULL,
    redirect_uri      TEXT NOT NULL,
    redirect_explicit INTEGER NOT NULL,
    code_expires_at   REAL NOT NULL,
    code_used_at      REAL,
    created_at        REAL NOT NULL,
    refreshed_at      REAL,
    revoked_at        REAL,
    revoked_reason    TEXT,
    revoked_by        TEXT
);
CREATE INDEX IF NOT EXISTS oauth_grants_run ON oauth_grants (run_id, created_at);
CREATE TABLE IF NOT EXISTS oauth_tokens (
    token_hash  TEXT PRIMARY KEY,
    grant_id    TEXT NOT NULL REFERENCES oauth_grants (grant_id),
    kind        TEXT NOT NULL,                   -- access | refresh
    created_at  REAL NOT NULL,
    expires_at  REAL NOT NULL,
    used_at     REAL                             -- a refresh token, once rotated
);
CREATE INDEX IF NOT EXISTS oauth_tokens_grant ON oauth_tokens (grant_id, kind, created_at);
