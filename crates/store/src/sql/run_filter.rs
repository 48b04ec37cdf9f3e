//! The runs list's filter tree and sort keys as SQL: every column is a fixed expression over
//! `trials t`, `experiments e`, `users u`, `projects p` (the joins of `sql/runs.rs`), every value a
//! bound parameter. JSON config fields are read with each dialect's own operator.

use super::args::{Args, contains_pattern, escape_like};
use crate::model_checkpoints::CHECKPOINT_COMPLETED;
use crate::model_runs::{RunColumn, RunFilterExpr, RunFilterOp, RunFilterValue, RunSortKey};

/// How a column's values compare.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Number,
    Text,
    Time,
    Bool,
    Labels,
}

fn kind(c: RunColumn) -> Kind {
    use RunColumn::*;
    match c {
        Id | ExperimentId | ProjectId | UserId | ForkedFrom | SearcherMetricValue | CheckpointCount | CheckpointSize | Duration => {
            Kind::Number
        }
        ExperimentName | ExperimentDescription | State | User | SearcherType | SearcherMetric | ResourcePool => Kind::Text,
        StartTime | EndTime => Kind::Time,
        IsExpMultitrial => Kind::Bool,
        Tags => Kind::Labels,
    }
}

/// The SQL expression of a column. `sqlite` picks the dialect's JSON and time functions.
pub(super) fn column_sql(c: RunColumn, sqlite: bool, args: &mut Args) -> String {
    let json = |path: &[&str]| {
        if sqlite {
            format!("json_extract(e.config, '$.{}')", path.join("."))
        } else {
            format!("(CAST(e.config AS JSONB) #>> '{{{}}}')", path.join(","))
        }
    };
    match c {
        RunColumn::Id => "t.id".into(),
        RunColumn::ExperimentId => "e.id".into(),
        RunColumn::ExperimentName => "e.name".into(),
        RunColumn::ExperimentDescription => "e.description".into(),
        RunColumn::State => "t.state".into(),
        RunColumn::StartTime => "t.start_time".into(),
        RunColumn::EndTime => "t.end_time".into(),
        RunColumn::ProjectId => "e.project_id".into(),
        RunColumn::User => "u.username".into(),
        RunColumn::UserId => "e.owner_id".into(),
        RunColumn::ForkedFrom => "e.parent_id".into(),
        RunColumn::SearcherType => json(&["searcher", "name"]),
        RunColumn::SearcherMetric => json(&["searcher", "metric"]),
        RunColumn::ResourcePool => json(&["resources", "resource_pool"]),
        RunColumn::Tags => "e.labels".into(),
        RunColumn::SearcherMetricValue => "t.best_validation".into(),
        RunColumn::CheckpointCount => {
            format!("(SELECT COUNT(*) FROM checkpoints c WHERE c.trial_id = t.id AND c.state = {})", args.push(CHECKPOINT_COMPLETED))
        }
        RunColumn::CheckpointSize => format!(
            "(SELECT CAST(COALESCE(SUM(c.size), 0) AS BIGINT) FROM checkpoints c WHERE c.trial_id = t.id AND c.state = {})",
            args.push(CHECKPOINT_COMPLETED)
        ),
        RunColumn::IsExpMultitrial => "((SELECT COUNT(*) FROM trials t2 WHERE t2.experiment_id = e.id) > 1)".into(),
        RunColumn::Duration => {
            if sqlite {
                "CAST((julianday(COALESCE(t.end_time, 'now')) - julianday(t.start_time)) * 86400 AS INTEGER)".into()
            } else {
                "CAST(EXTRACT(EPOCH FROM (COALESCE(t.end_time, now()) - t.start_time)) AS BIGINT)".into()
            }
        }
    }
}

fn comparison(op: RunFilterOp) -> Option<&'static str> {
    Some(match op {
        RunFilterOp::Eq => "=",
        RunFilterOp::Ne => "<>",
        RunFilterOp::Lt => "<",
        RunFilterOp::Le => "<=",
        RunFilterOp::Gt => ">",
        RunFilterOp::Ge => ">=",
        _ => return None,
    })
}

/// A filter tree as one boolean SQL expression.
pub(super) fn filter_sql(expr: &RunFilterExpr, sqlite: bool, args: &mut Args) -> String {
    match expr {
        RunFilterExpr::Group { any, children } => {
            if children.is_empty() {
                return "TRUE".into();
            }
            let joiner = if *any { " OR " } else { " AND " };
            let parts: Vec<String> = children.iter().map(|c| filter_sql(c, sqlite, args)).collect();
            format!("({})", parts.join(joiner))
        }
        RunFilterExpr::Field { column, op, value } => field_sql(*column, *op, value, sqlite, args),
        RunFilterExpr::Hyperparameter { path, op, value } => hyperparameter_sql(path, *op, value, sqlite, args),
    }
}

/// A hyperparameter's value as a number and as text (NULL when it is absent or of the other
/// type), and whether it is present at all.
fn hyperparameter_sql(path: &[String], op: RunFilterOp, value: &RunFilterValue, sqlite: bool, args: &mut Args) -> String {
    let (number, text, present) = if sqlite {
        let p = args.push(format!("${}", path.iter().map(|k| format!(".\"{k}\"")).collect::<String>()));
        (
            format!("(CASE WHEN json_type(t.hparams, {p}) IN ('integer', 'real') THEN json_extract(t.hparams, {p}) END)"),
            format!("(CASE WHEN json_type(t.hparams, {p}) = 'text' THEN json_extract(t.hparams, {p}) END)"),
            format!("(json_type(t.hparams, {p}) IS NOT NULL AND json_type(t.hparams, {p}) <> 'null')"),
        )
    } else {
        let p = args.push(format!("{{{}}}", path.iter().map(|k| format!("\"{k}\"")).collect::<Vec<_>>().join(",")));
        let node = format!("(CAST(t.hparams AS JSONB) #> CAST({p} AS TEXT[]))");
        (
            format!("(CASE WHEN jsonb_typeof({node}) = 'number' THEN CAST({node} #>> '{{}}' AS DOUBLE PRECISION) END)"),
            format!("(CASE WHEN jsonb_typeof({node}) = 'string' THEN {node} #>> '{{}}' END)"),
            format!("(jsonb_typeof({node}) IS NOT NULL AND jsonb_typeof({node}) <> 'null')"),
        )
    };
    match op {
        RunFilterOp::IsEmpty => format!("NOT {present}"),
        RunFilterOp::NotEmpty => present,
        RunFilterOp::Contains | RunFilterOp::NotContains => {
            let needle = match value {
                RunFilterValue::Text(t) => t.to_ascii_lowercase(),
                RunFilterValue::Int(v) => v.to_string(),
                RunFilterValue::Float(v) => v.to_string(),
                _ => String::new(),
            };
            let like = format!("{} LIKE {} ESCAPE '\\'", lowered(&text, sqlite), args.push(contains_pattern(&needle)));
            if op == RunFilterOp::Contains { like } else { format!("({text} IS NULL OR NOT ({like}))") }
        }
        _ => {
            let cmp = comparison(op).unwrap_or("=");
            let (col, v) = match value {
                RunFilterValue::Int(n) => (number, args.push(*n as f64)),
                RunFilterValue::Float(n) => (number, args.push(*n)),
                RunFilterValue::Text(t) => (text, args.push(t.as_str())),
                _ => return "FALSE".into(),
            };
            format!("{col} {cmp} {v}")
        }
    }
}

fn bind(value: &RunFilterValue, args: &mut Args) -> String {
    match value {
        RunFilterValue::None => "NULL".into(),
        RunFilterValue::Int(v) => args.push(*v),
        RunFilterValue::Float(v) => args.push(*v),
        RunFilterValue::Text(v) => args.push(v.as_str()),
        RunFilterValue::Bool(v) => args.push(*v),
        RunFilterValue::Time(v) => args.push(*v),
        RunFilterValue::TextList(v) => args.push_list(v.iter().map(String::as_str)),
    }
}

fn lowered(col: &str, sqlite: bool) -> String {
    // ASCII case folding on both backends, as the experiment list's name filter.
    if sqlite { format!("LOWER({col})") } else { format!(r#"LOWER(CAST({col} AS TEXT) COLLATE "C")"#) }
}

fn field_sql(column: RunColumn, op: RunFilterOp, value: &RunFilterValue, sqlite: bool, args: &mut Args) -> String {
    let col = column_sql(column, sqlite, args);
    let k = kind(column);
    if k == Kind::Labels {
        let text = match value {
            RunFilterValue::Text(t) => t.clone(),
            _ => String::new(),
        };
        // `labels` is a compact JSON array; see the experiment list's label filter.
        let element = "(',' || SUBSTR(e.labels, 2, LENGTH(e.labels) - 2) || ',')";
        return match op {
            RunFilterOp::IsEmpty => "e.labels = '[]'".into(),
            RunFilterOp::NotEmpty => "e.labels <> '[]'".into(),
            RunFilterOp::NotContains | RunFilterOp::Ne => {
                let p = args.push(format!("%,{},%", escape_like(&serde_json::Value::from(text).to_string())));
                format!("{element} NOT LIKE {p} ESCAPE '\\'")
            }
            _ => {
                let p = args.push(format!("%,{},%", escape_like(&serde_json::Value::from(text).to_string())));
                format!("{element} LIKE {p} ESCAPE '\\'")
            }
        };
    }
    match op {
        RunFilterOp::IsEmpty if k == Kind::Text => format!("({col} IS NULL OR {col} = '')"),
        RunFilterOp::NotEmpty if k == Kind::Text => format!("({col} IS NOT NULL AND {col} <> '')"),
        RunFilterOp::IsEmpty => format!("{col} IS NULL"),
        RunFilterOp::NotEmpty => format!("{col} IS NOT NULL"),
        RunFilterOp::Contains | RunFilterOp::NotContains => {
            let needle = match value {
                RunFilterValue::Text(t) => t.to_ascii_lowercase(),
                RunFilterValue::Int(v) => v.to_string(),
                RunFilterValue::Float(v) => v.to_string(),
                _ => String::new(),
            };
            let p = args.push(contains_pattern(&needle));
            let like = format!("{} LIKE {p} ESCAPE '\\'", lowered(&col, sqlite));
            if op == RunFilterOp::Contains { like } else { format!("({col} IS NULL OR NOT ({like}))") }
        }
        RunFilterOp::In => format!("{col} IN ({})", bind(value, args)),
        RunFilterOp::NotIn => format!("{col} NOT IN ({})", bind(value, args)),
        _ => {
            let cmp = comparison(op).unwrap_or("=");
            if *value == RunFilterValue::None {
                return if op == RunFilterOp::Ne { format!("{col} IS NOT NULL") } else { format!("{col} IS NULL") };
            }
            let v = bind(value, args);
            // `<>` keeps rows where the column is NULL, as a user reading "is not" expects.
            if op == RunFilterOp::Ne { format!("({col} IS NULL OR {col} <> {v})") } else { format!("{col} {cmp} {v}") }
        }
    }
}

/// `ORDER BY` keys; the run id ends every order so pages never overlap.
pub(super) fn order_sql(keys: &[RunSortKey], sqlite: bool, args: &mut Args) -> String {
    let mut parts = Vec::new();
    let mut has_id = false;
    for key in keys {
        has_id |= key.column == RunColumn::Id;
        let dir = if key.descending { "DESC" } else { "ASC" };
        parts.push(format!("{} {dir} NULLS LAST", column_sql(key.column, sqlite, args)));
    }
    if !has_id {
        parts.push("t.id ASC".into());
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_bound_and_groups_nest() {
        let mut args = Args::default();
        let expr = RunFilterExpr::Group {
            any: true,
            children: vec![
                RunFilterExpr::Field { column: RunColumn::Id, op: RunFilterOp::Gt, value: RunFilterValue::Int(3) },
                RunFilterExpr::Field {
                    column: RunColumn::ExperimentName,
                    op: RunFilterOp::Contains,
                    value: RunFilterValue::Text("x'; DROP".into()),
                },
            ],
        };
        let sql = filter_sql(&expr, true, &mut args);
        assert_eq!(sql, "(t.id > $1 OR LOWER(e.name) LIKE $2 ESCAPE '\\')");
        assert!(!sql.contains("DROP"), "the value is bound, never inlined");
        assert_eq!(args.values().len(), 2);
    }

    #[test]
    fn hyperparameter_paths_are_bound() {
        let mut args = Args::default();
        let expr =
            RunFilterExpr::Hyperparameter { path: vec!["opt".into(), "lr".into()], op: RunFilterOp::Lt, value: RunFilterValue::Float(0.5) };
        let sql = filter_sql(&expr, true, &mut args);
        assert!(sql.starts_with("(CASE WHEN json_type(t.hparams, $1)"), "{sql}");
        assert!(matches!(&args.values()[0], crate::sql::args::Arg::Text(Some(p)) if p == "$.\"opt\".\"lr\""));
        let mut args = Args::default();
        filter_sql(&expr, false, &mut args);
        assert!(matches!(&args.values()[0], crate::sql::args::Arg::Text(Some(p)) if p == "{\"opt\",\"lr\"}"));
    }

    #[test]
    fn order_ends_with_the_id() {
        let mut args = Args::default();
        let keys = [RunSortKey { column: RunColumn::ExperimentName, descending: true }];
        assert_eq!(order_sql(&keys, true, &mut args), "e.name DESC NULLS LAST, t.id ASC");
    }
}
