-- A project's experiment list (`det project list-experiments`, the SDK's `list_experiments`,
-- `GET /api/v1/experiments?projectId=…`) filters on the project, `archived`, the owner, the state
-- and the name. Without these indexes every such page and its total read each of the project's
-- rows (~2 KB of configs each): 9,000 rows a request at 10,000 experiments.
-- (project_id, archived) walks a project's live experiments in id order (the rowid ends every
-- SQLite index), so a deep OFFSET reads index entries only; it replaces (project_id).
DROP INDEX experiments_project_id;
CREATE INDEX experiments_project_archived ON experiments (project_id, archived);
-- Every column the list filters or sorts on within a project: totals and filtered pages are
-- answered from the index (a covering scan) instead of the table.
CREATE INDEX experiments_project_filter ON experiments (project_id, archived, owner_id, state, start_time, name);
