-- The experiment list's sorts (`ORDER BY <column>, id` with a LIMIT) read pages off these
-- indexes instead of sorting every experiment per request.
CREATE INDEX experiments_start_time_id ON experiments (start_time, id);
CREATE INDEX experiments_lower_name_id ON experiments (LOWER(name), id);
CREATE INDEX experiments_state_id ON experiments (state, id);
