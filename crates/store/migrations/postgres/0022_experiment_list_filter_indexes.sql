-- A project's experiment list (`det project list-experiments`, the SDK's `list_experiments`,
-- `GET /api/v1/experiments?projectId=…`) filters on the project, `archived`, the owner, the state
-- and the name. (project_id, archived, id) walks a project's live experiments in id order as an
-- index-only scan (a deep OFFSET and the total read no heap); it replaces (project_id).
DROP INDEX experiments_project_id;
CREATE INDEX experiments_project_archived ON experiments (project_id, archived, id);
-- The other filter and sort columns, so filtered totals and pages can be index-only scans.
CREATE INDEX experiments_project_filter ON experiments (project_id, archived, owner_id, state) INCLUDE (start_time, name);
