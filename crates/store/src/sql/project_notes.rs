//! A project's notes (`PUT /api/v1/projects/{id}/notes`): the whole list replaced at once, as
//! upstream's SDK sends it (`add_note`/`remove_note` read, edit and put back the list). Unlike the
//! project's other fields, the built-in project's notes may change, as upstream allows.

use serde_json::Value;

use super::{SqlStore, expect_row, on_pool};
use crate::error::StoreResult;

impl SqlStore {
    pub(crate) async fn set_project_notes_impl(&self, id: i32, notes: &Value) -> StoreResult<()> {
        // JSON text escapes NUL, so no text check is needed here.
        let text = notes.to_string();
        let done = on_pool!(self, pool => {
            sqlx::query("UPDATE projects SET notes = $2 WHERE id = $1").bind(id).bind(&text).execute(pool).await?.rows_affected()
        });
        expect_row(done, "project", id)
    }
}
