-- Command tasks (commands, notebooks, shells, TensorBoards, generic tasks) and config templates.
-- Kept column-for-column in step with migrations/postgres/0007_command_tasks_templates.sql
-- (numbered 0007 in both folders; SQLite has no 0006). JSON documents are TEXT.

-- What only command tasks have; type, times, job and owner stay in their `tasks` row.
CREATE TABLE command_tasks (
    task_id TEXT PRIMARY KEY REFERENCES tasks (task_id) ON DELETE CASCADE,
    workspace_id INTEGER NOT NULL DEFAULT 1 REFERENCES workspaces (id),
    description TEXT NOT NULL DEFAULT '',
    config TEXT NOT NULL,
    -- tar.gz of the context directory; empty when there is none. Read only on request.
    context BLOB NOT NULL,
    extra TEXT NOT NULL DEFAULT '{}',
    exit_status TEXT,
    priority INTEGER
);
CREATE INDEX command_tasks_workspace_id ON command_tasks (workspace_id);
-- Command lists filter on the owner (task type already has tasks_task_type).
CREATE INDEX tasks_owner_id ON tasks (owner_id);

-- Names compare and sort bytewise (SQLite's BINARY; "C" on PostgreSQL).
CREATE TABLE templates (
    name TEXT PRIMARY KEY,
    config TEXT NOT NULL,
    workspace_id INTEGER NOT NULL DEFAULT 1 REFERENCES workspaces (id)
);
CREATE INDEX templates_workspace_id ON templates (workspace_id);
