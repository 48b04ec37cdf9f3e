-- The model registry: models (named, in a workspace) and their versions, each a registered
-- checkpoint. Kept column-for-column in step with migrations/sqlite/0013_models.sql.
-- JSON documents (metadata, labels) are TEXT, as in the other tables.

CREATE TABLE models (
    id SERIAL PRIMARY KEY,
    name TEXT COLLATE "C" NOT NULL UNIQUE,
    description TEXT NOT NULL DEFAULT '',
    notes TEXT NOT NULL DEFAULT '',
    metadata TEXT NOT NULL DEFAULT '{}',
    labels TEXT NOT NULL DEFAULT '[]',
    user_id INTEGER NOT NULL REFERENCES users (id),
    workspace_id INTEGER NOT NULL DEFAULT 1 REFERENCES workspaces (id),
    archived BOOLEAN NOT NULL DEFAULT FALSE,
    creation_time TIMESTAMPTZ NOT NULL,
    last_updated_time TIMESTAMPTZ NOT NULL
);
CREATE INDEX models_workspace_id ON models (workspace_id);

-- A version keeps its checkpoint row alive: no cascade from checkpoints, so deleting an
-- experiment or checkpoint that a version references is refused (and GC skips it).
CREATE TABLE model_versions (
    id SERIAL PRIMARY KEY,
    model_id INTEGER NOT NULL REFERENCES models (id) ON DELETE CASCADE,
    version INTEGER NOT NULL,
    checkpoint_uuid TEXT NOT NULL REFERENCES checkpoints (uuid),
    name TEXT NOT NULL DEFAULT '',
    comment TEXT NOT NULL DEFAULT '',
    notes TEXT NOT NULL DEFAULT '',
    metadata TEXT NOT NULL DEFAULT '{}',
    labels TEXT NOT NULL DEFAULT '[]',
    user_id INTEGER NOT NULL REFERENCES users (id),
    creation_time TIMESTAMPTZ NOT NULL,
    last_updated_time TIMESTAMPTZ NOT NULL,
    UNIQUE (model_id, version)
);
CREATE INDEX model_versions_checkpoint_uuid ON model_versions (checkpoint_uuid);
