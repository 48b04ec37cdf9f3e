-- Workspaces and projects as upstream manages them (issue 14): per-user pins, the workspace's
-- checkpoint storage and agent user group, deletion state; project keys and notes. Kept in step
-- with the other dialect's 0012_workspaces_projects.sql.
ALTER TABLE workspaces ADD COLUMN checkpoint_storage_config TEXT;
-- The Unix account tasks in the workspace run as: all four set, or none.
ALTER TABLE workspaces ADD COLUMN agent_uid INTEGER;
ALTER TABLE workspaces ADD COLUMN agent_gid INTEGER;
ALTER TABLE workspaces ADD COLUMN agent_user TEXT;
ALTER TABLE workspaces ADD COLUMN agent_group TEXT;
ALTER TABLE workspaces ADD COLUMN default_compute_pool TEXT NOT NULL DEFAULT '';
ALTER TABLE workspaces ADD COLUMN default_aux_pool TEXT NOT NULL DEFAULT '';
ALTER TABLE workspaces ADD COLUMN state TEXT NOT NULL DEFAULT 'WORKSPACE_STATE_UNSPECIFIED';
ALTER TABLE workspaces ADD COLUMN error_message TEXT NOT NULL DEFAULT '';

CREATE TABLE workspace_pins (
    workspace_id INTEGER NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    user_id INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    pinned_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (workspace_id, user_id)
);

ALTER TABLE projects ADD COLUMN key TEXT;
ALTER TABLE projects ADD COLUMN notes TEXT NOT NULL DEFAULT '[]';
ALTER TABLE projects ADD COLUMN state TEXT NOT NULL DEFAULT 'WORKSPACE_STATE_UNSPECIFIED';
ALTER TABLE projects ADD COLUMN error_message TEXT NOT NULL DEFAULT '';
UPDATE projects SET key = CASE WHEN id = 1 THEN 'UNCAT' ELSE 'P' || CAST(id AS TEXT) END;
CREATE UNIQUE INDEX projects_key ON projects (key);

-- A project's counts (active experiments, the latest start) read from the index alone.
CREATE INDEX experiments_project_state ON experiments (project_id, state);
CREATE INDEX experiments_project_start_time ON experiments (project_id, start_time);
