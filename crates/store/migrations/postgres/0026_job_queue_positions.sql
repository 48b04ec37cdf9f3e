-- Each job's place in its resource pool's queue (`det job update --ahead-of/--behind-of`, or
-- simply when it first queued), kept across master restarts. Same columns in both dialects.
-- `registered_at` (the scheduler's logical clock) and `seq` order the jobs of a pool; the master
-- continues both counters above the stored ones after a restart, so old and new rows compare.
CREATE TABLE job_queue_positions (
    resource_pool TEXT NOT NULL,
    job_id TEXT NOT NULL,
    registered_at BIGINT NOT NULL,
    seq BIGINT NOT NULL,
    PRIMARY KEY (resource_pool, job_id)
);
