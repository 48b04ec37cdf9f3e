//! Reading the master's JSON loosely, as upstream's bindings do for the fields the CLI prints:
//! absent or `null` fields render as empty cells instead of failing the whole command.

use std::io::{BufRead, Write};

use serde_json::Value;

use crate::client::Client;
use crate::error::CliError;
use crate::session;
use crate::table::Cell;

use super::Globals;

/// An authenticated client (cached token, else login), as upstream's `cli.setup_session`.
pub fn connect(g: &Globals) -> Result<Client, CliError> {
    Ok(session::login_with_cache(&g.master, g.user.as_deref())?.client)
}

/// The text at `key`, or `""`.
pub fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// An integer at `key`, whether a JSON number or an int64 string.
pub fn int(v: &Value, key: &str) -> Option<i64> {
    match v.get(key)? {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// An integer cell (empty when absent).
pub fn int_cell(v: &Value, key: &str) -> Cell {
    Cell::opt(int(v, key))
}

/// An enum value without its `STATE_` (or other common) prefix, as bindings' `DetEnum.__str__`.
pub fn state(v: &Value, key: &str) -> String {
    text(v, key).trim_start_matches("STATE_").to_owned()
}

/// Python's `str()` of a JSON value (`True`, `None`, `0.5`, `'x'` inside containers aside).
pub fn py_str(v: &Value) -> String {
    match v {
        Value::Null => "None".to_owned(),
        Value::Bool(b) => if *b { "True" } else { "False" }.to_owned(),
        Value::String(s) => s.clone(),
        Value::Number(n) if n.is_f64() => n.as_f64().map(crate::output::py_float_repr).unwrap_or_default(),
        other => other.to_string(),
    }
}

/// Cell for an arbitrary JSON scalar (numbers stay numbers for alignment).
pub fn value_cell(v: Option<&Value>) -> Cell {
    match v {
        None | Some(Value::Null) => Cell::Str(String::new()),
        Some(Value::Number(n)) => n.as_i64().map_or_else(|| Cell::Float(n.as_f64().unwrap_or(f64::NAN)), Cell::Int),
        Some(other) => Cell::Str(py_str(other)),
    }
}

/// Follows `pagination` from `offset` (upstream's `read_paginated`); `single` stops after one page.
pub fn read_paginated(
    client: &Client,
    path: impl Fn(i64) -> String,
    list_key: &str,
    offset: i64,
    single: bool,
) -> Result<Vec<Value>, CliError> {
    let mut items = Vec::new();
    let mut offset = offset;
    loop {
        let page: Value = client.get(&path(offset))?;
        if let Some(list) = page.get(list_key).and_then(Value::as_array) {
            items.extend(list.iter().cloned());
        }
        let p = page.get("pagination").cloned().unwrap_or(Value::Null);
        let (end, total) = (int(&p, "endIndex").unwrap_or(0), int(&p, "total").unwrap_or(0));
        // The progress check keeps a misbehaving master from looping us forever.
        if single || end >= total || end <= offset {
            return Ok(items);
        }
        offset = end;
    }
}

/// `render.yes_or_no`: asks until the answer is y/yes or n/no; end of input means no.
pub fn yes_or_no(prompt: &str) -> bool {
    let stdin = std::io::stdin();
    loop {
        print!("{prompt} [y/n]: ");
        let _ = std::io::stdout().flush();
        let mut line = String::new();
        match stdin.lock().read_line(&mut line) {
            Ok(0) | Err(_) => {
                println!();
                return false;
            }
            Ok(_) => {}
        }
        match line.trim().to_lowercase().as_str() {
            "y" | "yes" => return true,
            "n" | "no" => return false,
            _ => println!("Please respond with 'y'/'yes' or 'n'/'no'"),
        }
    }
}
