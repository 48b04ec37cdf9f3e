-- The Unix account on agents a user's tasks run as (upstream's agent user group,
-- `det user link-with-agent-user`). Written together: all four set, or none. Kept in step with
-- the other dialect's 0008_agent_user_groups.sql.
ALTER TABLE users ADD COLUMN agent_uid INTEGER;
ALTER TABLE users ADD COLUMN agent_gid INTEGER;
ALTER TABLE users ADD COLUMN agent_user TEXT;
ALTER TABLE users ADD COLUMN agent_group TEXT;
