//! Upstream's run filter and sort texts parsed into the store's typed query: `filter` is the web
//! UI's JSON (`{"filterGroup": {"kind": "group", "conjunction": "and", "children": [{"kind":
//! "field", "columnName": "experimentName", "operator": "contains", "value": "x"}]},
//! "showArchived": false}`), `sort` is `column=asc|desc,...`. Every mistake is a 400 naming where
//! it is (`filter.filterGroup.children[0].operator`). Hyperparameters filter (`hp.NAME`); metric
//! columns, and sorting by hyperparameters or metrics, are not supported yet and say so.

use chrono::{DateTime, Utc};
use resolute_store::{RunColumn, RunFilterExpr, RunFilterOp, RunFilterValue, RunSortKey};
use serde_json::Value;

use crate::domain::{ACTIVE_STATE_NAMES, TrialState};
use crate::error::{ApiError, ApiResult};

/// Groups deeper than this are refused (the web UI nests two levels).
const MAX_DEPTH: usize = 8;
/// Fields in one filter, all groups together.
const MAX_FIELDS: usize = 200;

/// A parsed filter: the tree (None: no condition) and whether archived runs are shown.
#[derive(Debug, PartialEq)]
pub struct RunFilter {
    pub expr: Option<RunFilterExpr>,
    pub show_archived: bool,
}

/// A run column by upstream's name (run-table names and the experiment-location aliases).
fn column(name: &str) -> Option<RunColumn> {
    Some(match name {
        "id" => RunColumn::Id,
        "experimentId" => RunColumn::ExperimentId,
        "experimentName" | "name" => RunColumn::ExperimentName,
        "experimentDescription" | "description" => RunColumn::ExperimentDescription,
        "state" => RunColumn::State,
        "startTime" => RunColumn::StartTime,
        "endTime" => RunColumn::EndTime,
        "projectId" => RunColumn::ProjectId,
        "user" => RunColumn::User,
        "userId" => RunColumn::UserId,
        "forkedFrom" => RunColumn::ForkedFrom,
        "searcherType" => RunColumn::SearcherType,
        "searcherMetric" => RunColumn::SearcherMetric,
        "resourcePool" => RunColumn::ResourcePool,
        "tags" => RunColumn::Tags,
        "searcherMetricsVal" | "searcherMetricValue" => RunColumn::SearcherMetricValue,
        "checkpointCount" => RunColumn::CheckpointCount,
        "checkpointSize" => RunColumn::CheckpointSize,
        "isExpMultitrial" => RunColumn::IsExpMultitrial,
        "duration" => RunColumn::Duration,
        _ => return None,
    })
}

const COLUMN_NAMES: &str = "id, experimentId, experimentName, experimentDescription, state, startTime, endTime, projectId, user, \
     userId, forkedFrom, searcherType, searcherMetric, resourcePool, tags, searcherMetricsVal, checkpointCount, checkpointSize, \
     isExpMultitrial, duration";

fn operator(name: &str) -> Option<RunFilterOp> {
    Some(match name {
        "=" | "is" => RunFilterOp::Eq,
        "!=" | "is not" => RunFilterOp::Ne,
        "<" => RunFilterOp::Lt,
        "<=" => RunFilterOp::Le,
        ">" => RunFilterOp::Gt,
        ">=" => RunFilterOp::Ge,
        "contains" => RunFilterOp::Contains,
        "notContains" | "does not contain" => RunFilterOp::NotContains,
        "isEmpty" | "is empty" => RunFilterOp::IsEmpty,
        "notEmpty" | "not empty" => RunFilterOp::NotEmpty,
        _ => return None,
    })
}

pub fn parse_filter(text: &str) -> ApiResult<RunFilter> {
    let root: Value = serde_json::from_str(text)
        .map_err(|e| ApiError::invalid(format!("filter: not valid JSON ({e}); expected {{\"filterGroup\": ...}}")))?;
    let Value::Object(root) = root else {
        return Err(ApiError::invalid("filter: expected a JSON object with filterGroup and showArchived"));
    };
    let show_archived = match root.get("showArchived") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(ApiError::invalid("filter.showArchived: expected true or false")),
    };
    let mut fields = 0;
    let expr = match root.get("filterGroup") {
        None | Some(Value::Null) => None,
        Some(group) => node(group, "filter.filterGroup", 0, &mut fields)?,
    };
    Ok(RunFilter { expr, show_archived })
}

fn text_of<'a>(obj: &'a serde_json::Map<String, Value>, key: &str, at: &str) -> ApiResult<Option<&'a str>> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(ApiError::invalid(format!("{at}.{key}: expected a string"))),
    }
}

fn node(v: &Value, at: &str, depth: usize, fields: &mut usize) -> ApiResult<Option<RunFilterExpr>> {
    let Value::Object(obj) = v else {
        return Err(ApiError::invalid(format!("{at}: expected an object with kind \"group\" or \"field\"")));
    };
    if depth > MAX_DEPTH {
        return Err(ApiError::invalid(format!("{at}: groups nest at most {MAX_DEPTH} deep")));
    }
    match text_of(obj, "kind", at)? {
        Some("group") => {
            let any = match text_of(obj, "conjunction", at)? {
                Some("and") => false,
                Some("or") => true,
                Some(other) => return Err(ApiError::invalid(format!("{at}.conjunction: {other:?} is not \"and\" or \"or\""))),
                None => return Err(ApiError::invalid(format!("{at}.conjunction: a group needs \"and\" or \"or\""))),
            };
            let children = match obj.get("children") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(items)) => {
                    let mut out = Vec::new();
                    for (i, child) in items.iter().enumerate() {
                        if let Some(e) = node(child, &format!("{at}.children[{i}]"), depth + 1, fields)? {
                            out.push(e);
                        }
                    }
                    out
                }
                Some(_) => return Err(ApiError::invalid(format!("{at}.children: expected a list"))),
            };
            Ok(Some(RunFilterExpr::Group { any, children }))
        }
        Some("field") => {
            *fields += 1;
            if *fields > MAX_FIELDS {
                return Err(ApiError::invalid(format!("filter: at most {MAX_FIELDS} fields")));
            }
            field(obj, at)
        }
        Some(other) => Err(ApiError::invalid(format!("{at}.kind: {other:?} is not \"group\" or \"field\""))),
        None => Err(ApiError::invalid(format!("{at}.kind: expected \"group\" or \"field\""))),
    }
}

fn field(obj: &serde_json::Map<String, Value>, at: &str) -> ApiResult<Option<RunFilterExpr>> {
    let name = text_of(obj, "columnName", at)?.ok_or_else(|| ApiError::invalid(format!("{at}.columnName: missing")))?;
    let location = text_of(obj, "location", at)?;
    if location == Some("LOCATION_TYPE_HYPERPARAMETERS") || name.starts_with("hp.") {
        return hyperparameter(obj, name, at);
    }
    match location {
        None | Some("LOCATION_TYPE_RUN" | "LOCATION_TYPE_EXPERIMENT" | "LOCATION_TYPE_UNSPECIFIED") => {}
        Some(other) => {
            return Err(ApiError::invalid(format!(
                "{at}.location: {other} columns (metrics, metadata) are not supported in run filters yet; \
                 filter on hyperparameters (hp.NAME) or the run and experiment columns ({COLUMN_NAMES})"
            )));
        }
    }
    let col = column(name)
        .ok_or_else(|| ApiError::invalid(format!("{at}.columnName: unknown run column {name:?}; filterable columns: {COLUMN_NAMES}")))?;
    let op_name = text_of(obj, "operator", at)?.ok_or_else(|| ApiError::invalid(format!("{at}.operator: missing")))?;
    let op = operator(op_name).ok_or_else(|| {
        ApiError::invalid(format!("{at}.operator: {op_name:?} is not one of =, !=, <, <=, >, >=, contains, notContains, isEmpty, notEmpty"))
    })?;
    if matches!(op, RunFilterOp::IsEmpty | RunFilterOp::NotEmpty) {
        return Ok(Some(RunFilterExpr::Field { column: col, op, value: RunFilterValue::None }));
    }
    let raw = match obj.get("value") {
        // Upstream ignores a field whose value is not filled in yet.
        None | Some(Value::Null) => return Ok(None),
        Some(v) => v,
    };
    let at_value = format!("{at}.value");
    if col == RunColumn::Tags && !matches!(op, RunFilterOp::Contains | RunFilterOp::NotContains) {
        return Err(ApiError::invalid(format!("{at}.operator: tags take contains, notContains, isEmpty or notEmpty")));
    }
    let (op, value) = typed_value(col, op, raw, &at_value)?;
    Ok(Some(RunFilterExpr::Field { column: col, op, value }))
}

/// `hp.a.b`: a hyperparameter by its path; a number compares numbers, text compares text.
fn hyperparameter(obj: &serde_json::Map<String, Value>, name: &str, at: &str) -> ApiResult<Option<RunFilterExpr>> {
    let path: Vec<String> = name.strip_prefix("hp.").unwrap_or(name).split('.').map(str::to_owned).collect();
    if path.iter().any(|k| k.is_empty() || k.contains('"') || k.contains('\\') || k.contains('\0')) {
        return Err(ApiError::invalid(format!(
            "{at}.columnName: {name:?} is not a hyperparameter path (hp.NAME or hp.GROUP.NAME, without quotes or backslashes)"
        )));
    }
    let op_name = text_of(obj, "operator", at)?.ok_or_else(|| ApiError::invalid(format!("{at}.operator: missing")))?;
    let op = operator(op_name).ok_or_else(|| ApiError::invalid(format!("{at}.operator: {op_name:?} is not a filter operator")))?;
    let value = match (op, obj.get("value")) {
        (RunFilterOp::IsEmpty | RunFilterOp::NotEmpty, _) => RunFilterValue::None,
        (_, None | Some(Value::Null)) => return Ok(None),
        (_, Some(Value::Number(n))) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => RunFilterValue::Int(i),
            (None, Some(f)) => RunFilterValue::Float(f),
            _ => return Err(ApiError::invalid(format!("{at}.value: {n} is not a number a filter can compare"))),
        },
        (_, Some(Value::String(s))) => RunFilterValue::Text(s.clone()),
        (_, Some(Value::Bool(b))) => RunFilterValue::Text(b.to_string()),
        (_, Some(other)) => return Err(ApiError::invalid(format!("{at}.value: expected a number or a string, got {other}"))),
    };
    Ok(Some(RunFilterExpr::Hyperparameter { path, op, value }))
}

fn typed_value(col: RunColumn, op: RunFilterOp, raw: &Value, at: &str) -> ApiResult<(RunFilterOp, RunFilterValue)> {
    use RunColumn::*;
    let text = || match raw {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        _ => Err(ApiError::invalid(format!("{at}: expected a string"))),
    };
    if matches!(op, RunFilterOp::Contains | RunFilterOp::NotContains) {
        return Ok((op, RunFilterValue::Text(text()?)));
    }
    let value = match col {
        Id | ExperimentId | ProjectId | UserId | ForkedFrom | CheckpointCount | CheckpointSize | Duration => {
            let n = number(raw).ok_or_else(|| ApiError::invalid(format!("{at}: column takes a number, got {raw}")))?;
            if n.fract() == 0.0 && n.abs() < 9.0e15 { RunFilterValue::Int(n as i64) } else { RunFilterValue::Float(n) }
        }
        SearcherMetricValue => {
            RunFilterValue::Float(number(raw).ok_or_else(|| ApiError::invalid(format!("{at}: column takes a number, got {raw}")))?)
        }
        StartTime | EndTime => {
            let s = text()?;
            let t = DateTime::parse_from_rfc3339(&s)
                .map_err(|e| ApiError::invalid(format!("{at}: {s:?} is not an RFC 3339 time ({e})")))?
                .with_timezone(&Utc);
            RunFilterValue::Time(t)
        }
        IsExpMultitrial => match raw {
            Value::Bool(b) => RunFilterValue::Bool(*b),
            Value::String(s) if s == "true" || s == "false" => RunFilterValue::Bool(s == "true"),
            _ => return Err(ApiError::invalid(format!("{at}: column takes true or false, got {raw}"))),
        },
        State => {
            let s = text()?;
            let name = if s.starts_with("STATE_") { s.clone() } else { format!("STATE_{s}") };
            let state = TrialState::parse(&name).ok_or_else(|| ApiError::invalid(format!("{at}: unknown run state {s:?}")))?;
            // ACTIVE stands for every active substate, as the other state filters read it.
            if state == TrialState::Active && matches!(op, RunFilterOp::Eq | RunFilterOp::Ne) {
                let list = ACTIVE_STATE_NAMES.iter().map(|s| (*s).to_owned()).collect();
                let op = if op == RunFilterOp::Eq { RunFilterOp::In } else { RunFilterOp::NotIn };
                return Ok((op, RunFilterValue::TextList(list)));
            }
            RunFilterValue::Text(state.as_str().to_owned())
        }
        ExperimentName | ExperimentDescription | User | SearcherType | SearcherMetric | ResourcePool | Tags => {
            RunFilterValue::Text(text()?)
        }
    };
    Ok((op, value))
}

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok().filter(|f| f.is_finite()),
        _ => None,
    }
}

/// `column=asc|desc,...`; every run order ends with the id.
pub fn parse_sort(text: &str) -> ApiResult<Vec<RunSortKey>> {
    let mut keys = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((name, dir)) = part.split_once('=') else {
            return Err(ApiError::invalid(format!("sort: invalid sort parameter {part:?}; expected column=asc or column=desc")));
        };
        let descending = match dir {
            "asc" => false,
            "desc" => true,
            other => return Err(ApiError::invalid(format!("sort: invalid sort direction {other:?} in {part:?}; use asc or desc"))),
        };
        if name.starts_with("hp.") || name.contains('.') {
            return Err(ApiError::invalid(format!(
                "sort: sorting runs by hyperparameter or metric columns ({name}) is not supported yet; sort by one of {COLUMN_NAMES}"
            )));
        }
        let column = column(name)
            .filter(|c| *c != RunColumn::Tags)
            .ok_or_else(|| ApiError::invalid(format!("sort: invalid sort column {name:?}; sortable columns: {COLUMN_NAMES} (not tags)")))?;
        keys.push(RunSortKey { column, descending });
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn web_ui_filter_parses() {
        let f = parse_filter(
            r#"{"filterGroup":{"kind":"group","conjunction":"or","children":[
                {"kind":"field","columnName":"experimentName","location":"LOCATION_TYPE_RUN","operator":"contains","value":"mnist"},
                {"kind":"field","columnName":"state","operator":"=","value":"ACTIVE"},
                {"kind":"field","columnName":"id","operator":">=","value":3},
                {"kind":"field","columnName":"id","operator":"=","value":null}]},"showArchived":true}"#,
        )
        .unwrap();
        assert!(f.show_archived);
        let Some(RunFilterExpr::Group { any: true, children }) = f.expr else { panic!("{f:?}") };
        assert_eq!(children.len(), 3, "a field without a value is ignored");
        assert_eq!(
            children[1],
            RunFilterExpr::Field {
                column: RunColumn::State,
                op: RunFilterOp::In,
                value: RunFilterValue::TextList(ACTIVE_STATE_NAMES.iter().map(|s| (*s).to_owned()).collect())
            }
        );
        assert_eq!(children[2], RunFilterExpr::Field { column: RunColumn::Id, op: RunFilterOp::Ge, value: RunFilterValue::Int(3) });
    }

    #[test]
    fn mistakes_name_their_place() {
        let err = |text: &str| parse_filter(text).unwrap_err().message;
        assert!(err("nope").starts_with("filter: not valid JSON"));
        let bad_op = r#"{"filterGroup":{"kind":"group","conjunction":"and","children":[{"kind":"field","columnName":"id","operator":"~","value":1}]}}"#;
        assert!(err(bad_op).starts_with("filter.filterGroup.children[0].operator"), "{}", err(bad_op));
        let bad_col = r#"{"filterGroup":{"kind":"group","conjunction":"and","children":[{"kind":"field","columnName":"zzz","operator":"=","value":1}]}}"#;
        assert!(err(bad_col).starts_with("filter.filterGroup.children[0].columnName: unknown run column \"zzz\""));
        let bad_value = r#"{"filterGroup":{"kind":"field","columnName":"id","operator":"=","value":"x"}}"#;
        assert!(err(bad_value).starts_with("filter.filterGroup.value: column takes a number"));
        let metric = r#"{"filterGroup":{"kind":"field","columnName":"validation.loss","location":"LOCATION_TYPE_VALIDATIONS","operator":"=","value":1}}"#;
        assert!(err(metric).contains("not supported"));
        let hp = r#"{"filterGroup":{"kind":"field","columnName":"hp.a\"b","operator":"=","value":1}}"#;
        assert!(err(hp).starts_with("filter.filterGroup.columnName"), "{}", err(hp));
        let f = parse_filter(
            r#"{"filterGroup":{"kind":"field","columnName":"hp.opt.lr","location":"LOCATION_TYPE_HYPERPARAMETERS","operator":"<","value":0.5}}"#,
        );
        assert_eq!(
            f.unwrap().expr,
            Some(RunFilterExpr::Hyperparameter {
                path: vec!["opt".into(), "lr".into()],
                op: RunFilterOp::Lt,
                value: RunFilterValue::Float(0.5)
            })
        );
    }

    #[test]
    fn sort_text_parses() {
        let keys = parse_sort("experimentName=desc,id=asc").unwrap();
        assert_eq!(
            keys,
            vec![
                RunSortKey { column: RunColumn::ExperimentName, descending: true },
                RunSortKey { column: RunColumn::Id, descending: false }
            ]
        );
        assert!(parse_sort("id").unwrap_err().message.starts_with("sort: invalid sort parameter"));
        assert!(parse_sort("id=up").unwrap_err().message.starts_with("sort: invalid sort direction"));
        assert!(parse_sort("nope=asc").unwrap_err().message.starts_with("sort: invalid sort column"));
        assert!(parse_sort("validation.loss.last=asc").unwrap_err().message.contains("not supported"));
    }
}
