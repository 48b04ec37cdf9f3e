-- A project's experiments filtered by state and name, newest first (the web UI's and the SDK's
-- `list_experiments(states=…, name=…)` sorted by start time): (project_id, start_time) walked the
-- project's rows in start-time order and read each one's wide row (~2 KB of config) to test the
-- filters, about 1,000 rows for a 100-row page at 10,000 experiments. With the filter columns in
-- the index the walk reads index entries only; it replaces (project_id, start_time).
DROP INDEX experiments_project_start_time;
CREATE INDEX experiments_project_start_time ON experiments (project_id, start_time, archived, owner_id, state, name);
