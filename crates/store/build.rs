//! Rebuilds the crate when a migration is added: `sqlx::migrate!` embeds the migration files at
//! compile time, and cargo does not otherwise notice a new file in those directories.

fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
