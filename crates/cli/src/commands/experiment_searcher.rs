//! The searcher section of `det experiment describe` (a Resolute addition): the rungs of each
//! bracket and, per trial, its rung, what the searcher decided and how far it trained. Printed after
//! upstream's tables so scripts that parse those are unaffected; skipped for `single` searches and
//! for masters without the endpoint.

use resolute_api::searcher_state::GetSearcherStateResponse;

use crate::client::{Client, ClientError};
use crate::error::CliError;
use crate::output::{format_percent, tabulate_or_csv};
use crate::say;
use crate::table::Cell;

pub fn print_searcher_state(client: &Client, experiment_id: i64, csv: bool) -> Result<(), CliError> {
    let state: GetSearcherStateResponse = match client.get(&format!("api/v1/experiments/{experiment_id}/searcher/state")) {
        Ok(state) => state,
        // An upstream master has no such endpoint: nothing to add.
        Err(ClientError::NotFound(_)) | Err(ClientError::Api { status: 404 | 501, .. }) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    if state.method == "single" {
        return Ok(());
    }
    if !csv {
        let progress = match format_percent(Some(state.progress)) {
            Cell::Str(s) => s,
            _ => String::new(),
        };
        say!("\nSearcher: {} ({}), {progress} done; lengths in {}", state.method, state.status, state.unit);
    }

    let headers = ["Bracket", "Rung", "Length", "Planned Trials", "Recorded"];
    let rows: Vec<Vec<Cell>> = state
        .brackets
        .iter()
        .flat_map(|b| {
            b.rungs.iter().map(move |r| {
                vec![
                    Cell::Int(b.bracket as i64),
                    Cell::Int(r.rung as i64),
                    Cell::Int(r.length as i64),
                    Cell::Int(r.planned_trials as i64),
                    r.recorded.map_or(Cell::Str(String::new()), |n| Cell::Int(n as i64)),
                ]
            })
        })
        .collect();
    if !csv {
        say!("\nRungs:");
    }
    tabulate_or_csv(&headers, &rows, csv);

    let headers = ["Trial ID", "Bracket", "Rung", "Searcher State", "Decision", "Trained", "Last Metric", "Parent Trial"];
    let optional = |v: Option<i64>| v.map_or(Cell::Str(String::new()), Cell::Int);
    let rows: Vec<Vec<Cell>> = state
        .trials
        .iter()
        .map(|t| {
            vec![
                optional(t.trial_id.map(i64::from)),
                optional(t.bracket.map(|b| b as i64)),
                optional(t.rung.map(|r| r as i64)),
                Cell::Str(t.state.clone()),
                Cell::Str(t.decision.clone()),
                Cell::Int(t.time_progress as i64),
                t.last_metric.map_or(Cell::Str(String::new()), Cell::Float),
                optional(t.parent_trial_id.map(i64::from)),
            ]
        })
        .collect();
    if !csv {
        say!("\nSearcher trials:");
    }
    tabulate_or_csv(&headers, &rows, csv);
    Ok(())
}
