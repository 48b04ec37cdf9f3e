-- Task logs in chunks: one row per batch of a task's lines that share their ids and source, the
-- lines packed into `body` (format in src/log_chunk.rs) and numbered per task (first_seq..last_seq).
-- The one-row-per-line table is kept as task_logs_legacy; the store converts its rows into chunks
-- when it opens (src/sql/task_logs_legacy.rs).
ALTER TABLE task_logs RENAME TO task_logs_legacy;
ALTER INDEX task_logs_pkey RENAME TO task_logs_legacy_pkey;
DROP INDEX task_logs_task_id_id;

CREATE TABLE task_logs (
    task_id TEXT NOT NULL,
    first_seq BIGINT NOT NULL,
    last_seq BIGINT NOT NULL,
    allocation_id TEXT,
    agent_id TEXT,
    container_id TEXT,
    source TEXT,
    -- Oldest and newest line, µs since the epoch.
    min_ts BIGINT NOT NULL,
    max_ts BIGINT NOT NULL,
    -- JSON arrays of the lines' distinct ranks and streams, for logs/fields.
    rank_ids TEXT NOT NULL,
    stdtypes TEXT NOT NULL,
    body BYTEA NOT NULL,
    PRIMARY KEY (task_id, first_seq)
);
CREATE UNIQUE INDEX task_logs_task_id_last_seq ON task_logs (task_id, last_seq);

-- The last sequence number given out per task.
CREATE TABLE task_log_heads (
    task_id TEXT PRIMARY KEY,
    last_seq BIGINT NOT NULL
);
