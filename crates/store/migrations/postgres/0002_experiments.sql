-- Milestone 2: workspaces, projects, experiments, trials, metrics, checkpoints, tasks, logs.
-- Kept column-for-column in step with migrations/sqlite/0002_experiments.sql. JSON documents
-- are TEXT in both dialects; the store parses them.

CREATE TABLE workspaces (
    id SERIAL PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    archived BOOLEAN NOT NULL DEFAULT FALSE,
    immutable BOOLEAN NOT NULL DEFAULT FALSE,
    user_id INTEGER REFERENCES users (id) ON DELETE SET NULL
);

CREATE TABLE projects (
    id SERIAL PRIMARY KEY,
    name TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    workspace_id INTEGER NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    archived BOOLEAN NOT NULL DEFAULT FALSE,
    immutable BOOLEAN NOT NULL DEFAULT FALSE,
    user_id INTEGER REFERENCES users (id) ON DELETE SET NULL,
    UNIQUE (workspace_id, name)
);

INSERT INTO workspaces (id, name, immutable) VALUES (1, 'Uncategorized', TRUE);
INSERT INTO projects (id, name, workspace_id, immutable) VALUES (1, 'Uncategorized', 1, TRUE);
-- Explicit ids do not advance a sequence; move both past the seeded rows.
SELECT setval(pg_get_serial_sequence('workspaces', 'id'), 1);
SELECT setval(pg_get_serial_sequence('projects', 'id'), 1);

CREATE TABLE experiments (
    id SERIAL PRIMARY KEY,
    name TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    notes TEXT NOT NULL DEFAULT '',
    state TEXT NOT NULL,
    owner_id INTEGER NOT NULL REFERENCES users (id),
    project_id INTEGER NOT NULL REFERENCES projects (id),
    config TEXT NOT NULL,
    original_config TEXT NOT NULL,
    model_definition BYTEA NOT NULL,
    archived BOOLEAN NOT NULL DEFAULT FALSE,
    labels TEXT NOT NULL DEFAULT '[]',
    parent_id INTEGER REFERENCES experiments (id) ON DELETE SET NULL,
    start_time TIMESTAMPTZ NOT NULL,
    end_time TIMESTAMPTZ,
    progress DOUBLE PRECISION,
    searcher_snapshot TEXT,
    job_id TEXT NOT NULL,
    unmanaged BOOLEAN NOT NULL DEFAULT FALSE,
    end_reason TEXT
);
CREATE INDEX experiments_project_id ON experiments (project_id);
CREATE INDEX experiments_owner_id ON experiments (owner_id);
CREATE INDEX experiments_parent_id ON experiments (parent_id);

CREATE TABLE trials (
    id SERIAL PRIMARY KEY,
    experiment_id INTEGER NOT NULL REFERENCES experiments (id) ON DELETE CASCADE,
    request_id TEXT NOT NULL,
    task_id TEXT NOT NULL UNIQUE,
    state TEXT NOT NULL,
    hparams TEXT NOT NULL,
    seed BIGINT NOT NULL,
    start_time TIMESTAMPTZ NOT NULL,
    end_time TIMESTAMPTZ,
    restarts INTEGER NOT NULL DEFAULT 0,
    run_id INTEGER NOT NULL DEFAULT 1,
    total_batches BIGINT NOT NULL DEFAULT 0,
    latest_checkpoint_uuid TEXT,
    best_validation DOUBLE PRECISION,
    summary_metrics TEXT NOT NULL DEFAULT '{}',
    runner_state TEXT NOT NULL DEFAULT '',
    end_reason TEXT,
    progress DOUBLE PRECISION,
    UNIQUE (experiment_id, request_id)
);

CREATE TABLE metrics (
    id BIGSERIAL PRIMARY KEY,
    trial_id INTEGER NOT NULL REFERENCES trials (id) ON DELETE CASCADE,
    trial_run_id INTEGER NOT NULL,
    metric_group TEXT NOT NULL,
    steps_completed BIGINT NOT NULL,
    report_time TIMESTAMPTZ NOT NULL,
    body TEXT NOT NULL,
    archived BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE INDEX metrics_trial_group_steps ON metrics (trial_id, metric_group, steps_completed);

CREATE TABLE checkpoints (
    uuid TEXT PRIMARY KEY,
    task_id TEXT NOT NULL,
    allocation_id TEXT,
    trial_id INTEGER REFERENCES trials (id) ON DELETE CASCADE,
    experiment_id INTEGER REFERENCES experiments (id) ON DELETE CASCADE,
    report_time TIMESTAMPTZ NOT NULL,
    state TEXT NOT NULL,
    resources TEXT NOT NULL,
    metadata TEXT NOT NULL,
    steps_completed BIGINT NOT NULL,
    storage_id INTEGER,
    size BIGINT NOT NULL,
    searcher_metric DOUBLE PRECISION
);
CREATE INDEX checkpoints_experiment_id ON checkpoints (experiment_id);
CREATE INDEX checkpoints_trial_id ON checkpoints (trial_id);
CREATE INDEX checkpoints_task_id ON checkpoints (task_id);

CREATE TABLE tasks (
    task_id TEXT PRIMARY KEY,
    task_type TEXT NOT NULL,
    start_time TIMESTAMPTZ NOT NULL,
    end_time TIMESTAMPTZ,
    job_id TEXT,
    owner_id INTEGER REFERENCES users (id) ON DELETE SET NULL
);
CREATE INDEX tasks_task_type ON tasks (task_type);

CREATE TABLE allocations (
    allocation_id TEXT PRIMARY KEY,
    task_id TEXT NOT NULL REFERENCES tasks (task_id) ON DELETE CASCADE,
    state TEXT NOT NULL,
    slots INTEGER NOT NULL,
    resource_pool TEXT NOT NULL,
    agent_id TEXT,
    start_time TIMESTAMPTZ NOT NULL,
    end_time TIMESTAMPTZ,
    exit_reason TEXT,
    exit_code INTEGER,
    is_ready BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE INDEX allocations_task_id ON allocations (task_id);

CREATE TABLE allocation_sessions (
    id BIGSERIAL PRIMARY KEY,
    allocation_id TEXT NOT NULL REFERENCES allocations (allocation_id) ON DELETE CASCADE,
    token_hash TEXT NOT NULL UNIQUE,
    created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX allocation_sessions_allocation_id ON allocation_sessions (allocation_id);

-- No foreign key to tasks: the hot insert path stays a plain append; deleting an experiment
-- removes its trials' logs explicitly.
CREATE TABLE task_logs (
    id BIGSERIAL PRIMARY KEY,
    task_id TEXT NOT NULL,
    allocation_id TEXT,
    agent_id TEXT,
    container_id TEXT,
    rank_id INTEGER,
    timestamp TIMESTAMPTZ NOT NULL,
    level TEXT,
    log TEXT NOT NULL,
    source TEXT,
    stdtype TEXT
);
CREATE INDEX task_logs_task_id_id ON task_logs (task_id, id);
