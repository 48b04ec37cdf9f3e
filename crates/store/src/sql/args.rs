//! Statements assembled at run time: filters over lists ("state IN ($3, $4)") and multi-row
//! inserts. The SQL text is built only from constants and `$n` placeholders; every value is bound,
//! collected in [`Args`] and applied by [`bind_args!`] to whichever backend's query is running.

use chrono::{DateTime, Utc};

use super::{Pool, SqlStore};
use crate::model::OrderDirection;

/// The most bind parameters one statement may carry: SQLite's `SQLITE_MAX_VARIABLE_NUMBER`
/// (PostgreSQL allows 65535).
pub(crate) const MAX_BIND_PARAMS: usize = 32766;

/// Bind parameters per multi-row statement on SQLite. Binding `$n` makes SQLite look each name
/// up by a linear scan, so a statement's cost grows with the square of its parameter count;
/// measured on 10-column log rows, ~200 parameters per statement is fastest (8x faster than
/// 10,000). Statements of one batch still share one transaction.
const SQLITE_PARAMS_PER_STATEMENT: usize = 200;

/// Rows per multi-row statement on PostgreSQL, which binds positionally.
const POSTGRES_ROWS_PER_STATEMENT: usize = 1000;

/// One bound value. `None` binds SQL NULL of the variant's type (PostgreSQL needs the type).
#[derive(Clone, Debug)]
pub(crate) enum Arg {
    Text(Option<String>),
    Int(Option<i32>),
    BigInt(Option<i64>),
    Float(Option<f64>),
    Bool(Option<bool>),
    Time(Option<DateTime<Utc>>),
}

macro_rules! arg_from {
    ($variant:ident, $ty:ty) => {
        impl From<$ty> for Arg {
            fn from(v: $ty) -> Arg {
                Arg::$variant(Some(v.into()))
            }
        }
        impl From<Option<$ty>> for Arg {
            fn from(v: Option<$ty>) -> Arg {
                Arg::$variant(v.map(Into::into))
            }
        }
    };
}
arg_from!(Text, String);
arg_from!(Text, &str);
arg_from!(Int, i32);
arg_from!(BigInt, i64);
arg_from!(Float, f64);
arg_from!(Bool, bool);
arg_from!(Time, DateTime<Utc>);

impl From<&String> for Arg {
    fn from(v: &String) -> Arg {
        Arg::Text(Some(v.clone()))
    }
}

impl From<&Option<String>> for Arg {
    fn from(v: &Option<String>) -> Arg {
        Arg::Text(v.clone())
    }
}

/// Values in placeholder order: the value pushed n-th binds `$n`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Args {
    values: Vec<Arg>,
}

impl Args {
    /// Adds a value; returns its placeholder.
    pub(crate) fn push(&mut self, value: impl Into<Arg>) -> String {
        self.values.push(value.into());
        format!("${}", self.values.len())
    }

    /// Adds every value; returns their placeholders separated by commas.
    pub(crate) fn push_list<T: Into<Arg>>(&mut self, values: impl IntoIterator<Item = T>) -> String {
        values.into_iter().map(|v| self.push(v)).collect::<Vec<_>>().join(", ")
    }

    pub(crate) fn values(&self) -> &[Arg] {
        &self.values
    }
}

/// Binds every value of an [`Args`] to a `query`, `query_as` or `query_scalar`, in order.
macro_rules! bind_args {
    ($query:expr, $args:expr) => {{
        let mut query = $query;
        for arg in $args.values() {
            query = match arg {
                $crate::sql::args::Arg::Text(v) => query.bind(v),
                $crate::sql::args::Arg::Int(v) => query.bind(v),
                $crate::sql::args::Arg::BigInt(v) => query.bind(v),
                $crate::sql::args::Arg::Float(v) => query.bind(v),
                $crate::sql::args::Arg::Bool(v) => query.bind(v),
                $crate::sql::args::Arg::Time(v) => query.bind(v),
            };
        }
        query
    }};
}
pub(crate) use bind_args;

/// A conjunction of conditions; an empty one is `TRUE`.
#[derive(Debug, Default)]
pub(crate) struct Conditions {
    clauses: Vec<String>,
}

impl Conditions {
    pub(crate) fn and(&mut self, clause: impl Into<String>) {
        self.clauses.push(clause.into());
    }

    /// `column IN (...)` over `values`; no condition when `values` is empty (= no filter).
    pub(crate) fn and_in<T: Into<Arg> + Clone>(&mut self, args: &mut Args, column: &str, values: &[T]) {
        if !values.is_empty() {
            let placeholders = args.push_list(values.iter().cloned());
            self.and(format!("{column} IN ({placeholders})"));
        }
    }

    pub(crate) fn sql(&self) -> String {
        if self.clauses.is_empty() { "TRUE".to_owned() } else { self.clauses.join(" AND ") }
    }
}

/// A multi-row `INSERT` split into statements that stay under [`MAX_BIND_PARAMS`].
pub(crate) struct BatchInsert {
    /// `INSERT INTO table (col, ...)`, without `VALUES`.
    head: &'static str,
    columns: usize,
    rows_per_statement: usize,
}

impl BatchInsert {
    pub(crate) fn new(head: &'static str, columns: usize, max_rows: usize) -> BatchInsert {
        BatchInsert { head, columns, rows_per_statement: (MAX_BIND_PARAMS / columns).min(max_rows).max(1) }
    }

    /// The statement split that suits `store`'s backend.
    pub(crate) fn for_store(store: &SqlStore, head: &'static str, columns: usize) -> BatchInsert {
        let max_rows = match store.pool {
            Pool::Sqlite(_) => SQLITE_PARAMS_PER_STATEMENT / columns,
            Pool::Postgres(_) => POSTGRES_ROWS_PER_STATEMENT,
        };
        BatchInsert::new(head, columns, max_rows)
    }

    pub(crate) fn rows_per_statement(&self) -> usize {
        self.rows_per_statement
    }

    /// The statement for `rows` rows: `head VALUES ($1, ..), ($k, ..), ...`.
    pub(crate) fn sql(&self, rows: usize) -> String {
        let mut sql = String::with_capacity(self.head.len() + rows * self.columns * 7);
        sql.push_str(self.head);
        sql.push_str(" VALUES ");
        let mut n = 0;
        for row in 0..rows {
            if row > 0 {
                sql.push_str(", ");
            }
            sql.push('(');
            for col in 0..self.columns {
                if col > 0 {
                    sql.push_str(", ");
                }
                n += 1;
                sql.push('$');
                sql.push_str(&n.to_string());
            }
            sql.push(')');
        }
        sql
    }
}

pub(crate) fn direction(order: OrderDirection) -> &'static str {
    match order {
        OrderDirection::Asc => "ASC",
        OrderDirection::Desc => "DESC",
    }
}

/// A LIKE pattern matching `needle` literally anywhere; use with `ESCAPE '\'`.
pub(crate) fn contains_pattern(needle: &str) -> String {
    format!("%{}%", escape_like(needle))
}

/// Escapes LIKE's wildcards and the escape character itself (`\`).
pub(crate) fn escape_like(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_insert_numbers_placeholders_across_rows() {
        let insert = BatchInsert::new("INSERT INTO t (a, b)", 2, 1000);
        assert_eq!(insert.sql(2), "INSERT INTO t (a, b) VALUES ($1, $2), ($3, $4)");
        assert_eq!(BatchInsert::new("I", 7, usize::MAX).rows_per_statement(), 32766 / 7);
        assert_eq!(BatchInsert::new("I", 7, 500).rows_per_statement(), 500);
    }

    #[test]
    fn like_wildcards_are_escaped() {
        assert_eq!(contains_pattern(r"50%_a\b"), r"%50\%\_a\\b%");
    }

    #[test]
    fn conditions_and_lists() {
        let mut args = Args::default();
        let mut cond = Conditions::default();
        assert_eq!(cond.sql(), "TRUE");
        cond.and_in::<&str>(&mut args, "state", &[]);
        assert_eq!(cond.sql(), "TRUE", "an empty list filters nothing");
        let first = args.push(7);
        cond.and(format!("id = {first}"));
        cond.and_in(&mut args, "state", &["A", "B"]);
        assert_eq!(cond.sql(), "id = $1 AND state IN ($2, $3)");
        assert_eq!(args.values().len(), 3);
    }
}
