-- The cluster-wide message an admin shows every user (`det master cluster-message set`).
-- Kept column-for-column in step with the other dialect's 0020_cluster_messages.sql. Setting a
-- message replaces the stored one; times are integer milliseconds since the epoch.
CREATE TABLE cluster_messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_by INTEGER REFERENCES users (id) ON DELETE SET NULL,
    message TEXT NOT NULL,
    start_ms BIGINT NOT NULL,
    -- NULL: shown until cleared.
    end_ms BIGINT,
    created_ms BIGINT NOT NULL
);
