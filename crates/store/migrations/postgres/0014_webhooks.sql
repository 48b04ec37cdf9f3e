-- Webhooks, their triggers, and the durable queue of events to deliver.
-- Kept column-for-column in step with migrations/sqlite/0014_webhooks.sql.
-- Times the delivery worker compares are integer milliseconds since the epoch on both backends.

CREATE TABLE webhooks (
    id SERIAL PRIMARY KEY,
    name TEXT NOT NULL,
    url TEXT NOT NULL,
    webhook_type TEXT NOT NULL,
    mode TEXT NOT NULL,
    -- NULL: every workspace (a cluster-wide webhook).
    workspace_id INTEGER REFERENCES workspaces (id) ON DELETE CASCADE,
    created_ms BIGINT NOT NULL
);

CREATE TABLE webhook_triggers (
    id SERIAL PRIMARY KEY,
    webhook_id INTEGER NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    trigger_type TEXT NOT NULL,
    -- The condition as the client sent it (JSON).
    condition TEXT NOT NULL,
    -- TRIGGER_TYPE_EXPERIMENT_STATE_CHANGE: the stored experiment state it fires on (STATE_COMPLETED).
    experiment_state TEXT
);
CREATE INDEX webhook_triggers_webhook_id ON webhook_triggers (webhook_id);
CREATE INDEX webhook_triggers_state ON webhook_triggers (trigger_type, experiment_state);

-- One row per (trigger, occurrence): written in the transaction that records an experiment's
-- state change, or right after a matching log batch is stored; the delivery worker moves it to
-- DELIVERED, FAILED or SKIPPED.
CREATE TABLE webhook_events (
    id BIGSERIAL PRIMARY KEY,
    event_uuid TEXT NOT NULL,
    webhook_id INTEGER NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    trigger_id INTEGER NOT NULL REFERENCES webhook_triggers (id) ON DELETE CASCADE,
    experiment_id INTEGER,
    experiment_state TEXT,
    task_id TEXT,
    -- The agent the matching line came from.
    node_name TEXT,
    log_line TEXT,
    -- Task-log events fire once per trigger and task.
    dedupe_key TEXT UNIQUE,
    status TEXT NOT NULL DEFAULT 'PENDING',
    attempts INTEGER NOT NULL DEFAULT 0,
    created_ms BIGINT NOT NULL,
    next_attempt_ms BIGINT NOT NULL,
    finished_ms BIGINT,
    last_error TEXT
);
CREATE INDEX webhook_events_pending ON webhook_events (status, next_attempt_ms);

-- The generated signing key when master.yaml sets none (one row, id 1), so signatures survive restarts.
CREATE TABLE webhook_signing_key (
    id INTEGER PRIMARY KEY,
    signing_key TEXT NOT NULL
);
