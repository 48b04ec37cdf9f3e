use thiserror::Error;

pub type StoreResult<T> = Result<T, StoreError>;

#[derive(Debug, Error)]
pub enum StoreError {
    #[error("{entity} not found: {key}")]
    NotFound { entity: &'static str, key: String },
    #[error("{entity} already exists: {key}")]
    Conflict { entity: &'static str, key: String },
    /// A value the caller gave that no backend can store as given (e.g. text with a NUL byte,
    /// which PostgreSQL refuses and SQLite would keep): refused the same way on both.
    #[error("invalid {field}: {reason}")]
    InvalidInput { field: &'static str, reason: &'static str },
    /// The change would break a rule the store keeps (e.g. the last active admin stays one);
    /// `reason` says which, for the caller.
    #[error("{reason}")]
    Precondition { reason: &'static str },
    /// A driver or database failure. The message is generic on purpose: the source (which may
    /// contain SQL) is for logs only.
    #[error("database error")]
    Backend(#[source] sqlx::Error),
    #[error("database migration failed")]
    Migration(#[source] sqlx::migrate::MigrateError),
    /// A failure of SQLite's own metrics writer connection (see `sql::sqlite_metrics`); as
    /// generic as [`Backend`](Self::Backend).
    #[error("database error")]
    Sqlite(#[source] rusqlite::Error),
    #[error("{context}")]
    Io {
        context: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// The SQLite metrics writer thread is gone (it ends only with the store).
    #[error("the database writer has stopped")]
    WriterStopped,
}

impl StoreError {
    pub(crate) fn not_found(entity: &'static str, key: impl ToString) -> Self {
        StoreError::NotFound { entity, key: key.to_string() }
    }

    /// `InvalidInput` when `value` holds a NUL character: PostgreSQL cannot store one in text.
    pub(crate) fn reject_nul(field: &'static str, value: &str) -> StoreResult<()> {
        if value.contains('\0') {
            return Err(StoreError::InvalidInput { field, reason: "contains a NUL character; remove it" });
        }
        Ok(())
    }

    /// Maps a unique-constraint violation to `Conflict`, anything else to `Backend`.
    pub(crate) fn from_write(entity: &'static str, key: impl ToString, err: sqlx::Error) -> Self {
        match &err {
            sqlx::Error::Database(db) if db.is_unique_violation() => StoreError::Conflict { entity, key: key.to_string() },
            _ => StoreError::Backend(err),
        }
    }

    /// Like [`from_write`](Self::from_write), and a foreign-key violation means the row the write
    /// refers to (`parent`, e.g. the trial of a metric) does not exist.
    pub(crate) fn from_write_ref(
        entity: &'static str,
        key: impl ToString,
        parent: &'static str,
        parent_key: impl ToString,
        err: sqlx::Error,
    ) -> Self {
        match &err {
            sqlx::Error::Database(db) if db.is_foreign_key_violation() => StoreError::not_found(parent, parent_key),
            _ => StoreError::from_write(entity, key, err),
        }
    }

    /// A stored document (JSON column) that does not parse: a backend fault, not the caller's.
    pub(crate) fn corrupt(column: &'static str, err: serde_json::Error) -> Self {
        StoreError::Backend(sqlx::Error::ColumnDecode { index: column.to_owned(), source: Box::new(err) })
    }

    /// A stored value of `column` that cannot be read, with what was wrong with it.
    pub(crate) fn corrupt_value(column: &'static str, detail: impl std::fmt::Display) -> Self {
        StoreError::Backend(sqlx::Error::ColumnDecode { index: column.to_owned(), source: detail.to_string().into() })
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(err: rusqlite::Error) -> Self {
        StoreError::Sqlite(err)
    }
}

impl From<sqlx::Error> for StoreError {
    fn from(err: sqlx::Error) -> Self {
        StoreError::Backend(err)
    }
}
