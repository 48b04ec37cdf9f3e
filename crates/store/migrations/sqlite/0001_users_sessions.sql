CREATE TABLE cluster_identity (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    cluster_id TEXT NOT NULL,
    created_at TEXT NOT NULL
);

CREATE TABLE users (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    username TEXT NOT NULL UNIQUE,
    display_name TEXT NOT NULL DEFAULT '',
    admin BOOLEAN NOT NULL DEFAULT FALSE,
    active BOOLEAN NOT NULL DEFAULT TRUE,
    remote BOOLEAN NOT NULL DEFAULT FALSE,
    password_hash TEXT,
    modified_at TEXT NOT NULL,
    last_auth_at TEXT
);

CREATE TABLE user_sessions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    token_hash TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL
);
CREATE INDEX user_sessions_user_id ON user_sessions (user_id);
