//! Upstream's `cli.render` helpers, reproduced so our text matches byte for byte: times, percents,
//! sizes, Python-style `json.dumps(..., indent=4)` cells, and `tabulate_or_csv`.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::say;
use crate::table::{self, Cell};

/// `render.format_time`: RFC 3339 in, `2024-01-02 03:04:05+0000` out; `None` stays empty.
pub fn format_time(ts: Option<&str>) -> Cell {
    match ts.and_then(|t| DateTime::parse_from_rfc3339(t).ok()) {
        Some(t) => Cell::Str(t.with_timezone(&Utc).format("%Y-%m-%d %H:%M:%S%z").to_string()),
        None => Cell::Str(String::new()),
    }
}

/// [`format_time`] for typed timestamps.
pub fn format_datetime(ts: Option<&DateTime<Utc>>) -> Cell {
    Cell::Str(ts.map(|t| t.format("%Y-%m-%d %H:%M:%S%z").to_string()).unwrap_or_default())
}

/// `render.format_percent`: `"{:.1%}"`.
pub fn format_percent(f: Option<f64>) -> Cell {
    Cell::Str(f.map(|f| format!("{:.1}%", f * 100.0)).unwrap_or_default())
}

/// `util.sizeof_fmt`: `"%3.1f%sB"` in powers of 1024.
pub fn sizeof_fmt(bytes: f64) -> String {
    let mut val = bytes;
    for unit in ["", "K", "M", "G", "T", "P", "E", "Z"] {
        if val.abs() < 1024.0 {
            return format!("{val:3.1}{unit}B");
        }
        val /= 1024.0;
    }
    format!("{val:.1}YB")
}

/// Python's `json.dumps(value, indent=4)`: `", "`-free separators with newlines, `": "` after
/// keys, non-ASCII escaped, floats as `repr`.
pub fn py_json(value: &Value) -> String {
    let mut out = String::new();
    write_py_json(value, 0, &mut out);
    out
}

fn write_py_json(value: &Value, depth: usize, out: &mut String) {
    let indent = |d: usize| "    ".repeat(d);
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => out.push_str(&i.to_string()),
            (_, Some(u), _) => out.push_str(&u.to_string()),
            (_, _, Some(f)) => out.push_str(&py_float_repr(f)),
            _ => out.push_str(&n.to_string()),
        },
        Value::String(s) => out.push_str(&py_string(s)),
        Value::Array(items) if items.is_empty() => out.push_str("[]"),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                out.push_str(if i == 0 { "\n" } else { ",\n" });
                out.push_str(&indent(depth + 1));
                write_py_json(item, depth + 1, out);
            }
            out.push('\n');
            out.push_str(&indent(depth));
            out.push(']');
        }
        Value::Object(map) if map.is_empty() => out.push_str("{}"),
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                out.push_str(if i == 0 { "\n" } else { ",\n" });
                out.push_str(&indent(depth + 1));
                out.push_str(&py_string(k));
                out.push_str(": ");
                write_py_json(v, depth + 1, out);
            }
            out.push('\n');
            out.push_str(&indent(depth));
            out.push('}');
        }
    }
}

/// A JSON string literal with `ensure_ascii=True`.
fn py_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Python's `repr(float)`: shortest round-trip digits, exponent form below 1e-4 and from 1e16.
pub fn py_float_repr(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_owned();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.to_owned();
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if f == 0.0 || (-4..16).contains(&exp) {
        let fixed = f.to_string();
        return if fixed.contains('.') { fixed } else { format!("{fixed}.0") };
    }
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.abs())
}

/// Python's `csv.writer` defaults: minimal quoting, `\r\n` line ends.
pub fn csv_line(cells: &[String]) -> String {
    let quoted: Vec<String> = cells
        .iter()
        .map(|c| if c.contains([',', '"', '\n', '\r']) { format!("\"{}\"", c.replace('"', "\"\"")) } else { c.clone() })
        .collect();
    format!("{}\r\n", quoted.join(","))
}

/// Writes text as is (no newline added), tolerating a closed stdout like [`crate::render::emit`].
pub fn emit_raw(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

/// The text a cell has in CSV (Python's `str()` of the value; `None` is empty).
fn csv_text(cell: &Cell) -> String {
    match cell {
        Cell::Int(n) => n.to_string(),
        Cell::Float(f) => py_float_repr(*f),
        Cell::Str(s) => s.clone(),
    }
}

/// `render.tabulate_or_csv` to stdout.
pub fn tabulate_or_csv(headers: &[&str], rows: &[Vec<Cell>], as_csv: bool) {
    if as_csv {
        let mut out = csv_line(&headers.iter().map(|h| (*h).to_owned()).collect::<Vec<_>>());
        for row in rows {
            out.push_str(&csv_line(&row.iter().map(csv_text).collect::<Vec<_>>()));
        }
        emit_raw(&out);
    } else {
        say!("{}", table::render(headers, rows));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    // Expected strings from CPython 3.11 and upstream's render module.
    #[test]
    fn matches_python_json_dumps_indent_4() {
        let v = json!({"lr": 0.0001, "n": 3, "s": "é\"", "l": [1, 1e-5, 1e16, 100.0], "e": {}, "z": []});
        let expected = "{\n    \"e\": {},\n    \"l\": [\n        1,\n        1e-05,\n        1e+16,\n        100.0\n    ],\n    \
                        \"lr\": 0.0001,\n    \"n\": 3,\n    \"s\": \"\\u00e9\\\"\",\n    \"z\": []\n}";
        assert_eq!(py_json(&v), expected);
    }

    #[test]
    fn formats_times_percents_sizes() {
        assert_eq!(format_time(Some("2024-03-01T10:11:12.5+01:00")), Cell::Str("2024-03-01 09:11:12+0000".into()));
        assert_eq!(format_time(None), Cell::Str(String::new()));
        assert_eq!(format_percent(Some(0.4567)), Cell::Str("45.7%".into()));
        assert_eq!(sizeof_fmt(0.0), "0.0B");
        assert_eq!(sizeof_fmt(1536.0), "1.5KB");
        assert_eq!(sizeof_fmt(95.0 * 1024.0 * 1024.0), "95.0MB");
    }

    #[test]
    fn csv_quotes_like_python() {
        assert_eq!(csv_line(&["a".into(), "b,c".into(), "x\"y".into(), "".into()]), "a,\"b,c\",\"x\"\"y\",\r\n");
    }
}
