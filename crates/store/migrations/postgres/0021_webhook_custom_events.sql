-- A custom webhook event (`POST /api/v1/webhooks/custom`, the harness's `core.alert`): its
-- title, description, level and trial as JSON. NULL for the other kinds of event.
ALTER TABLE webhook_events ADD COLUMN custom_data TEXT;
