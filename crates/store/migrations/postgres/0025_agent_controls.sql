-- What admins made of agents (`det agent enable/disable [--drain]`, `det slot enable/disable`),
-- kept across master restarts and agent reconnects. Same columns in both dialects. One row per
-- agent id that was ever changed; `disabled_slots` is a JSON array of slot (device) ids.
CREATE TABLE agent_controls (
    agent_id TEXT PRIMARY KEY,
    -- 'enabled', 'draining' or 'disabled'.
    mode TEXT NOT NULL,
    disabled_slots TEXT NOT NULL DEFAULT '[]',
    updated_ms BIGINT NOT NULL
);
