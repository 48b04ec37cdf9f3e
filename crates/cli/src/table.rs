//! Tables in python-tabulate's `presto` format, which upstream uses for every listing.
//!
//! The rules that matter for compatibility, checked against tabulate 0.9/0.10:
//! - a column whose non-empty cells are all integers is right-aligned (header too), any other
//!   column is left-aligned;
//! - column width is `max(widest cell, header + 2)`, plus one space of padding on each side;
//! - cells are trimmed, and trailing whitespace is stripped from every line.

/// One table cell. Strings that parse as integers count as numbers, like tabulate's `numparse`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cell {
    Int(i64),
    Str(String),
}

impl Cell {
    fn text(&self) -> String {
        match self {
            Cell::Int(n) => n.to_string(),
            Cell::Str(s) => s.trim().to_owned(),
        }
    }

    /// `Some(true)` for numbers, `Some(false)` for text, `None` for empty (ignored when typing).
    fn is_numeric(&self) -> Option<bool> {
        match self {
            Cell::Int(_) => Some(true),
            Cell::Str(s) if s.trim().is_empty() => None,
            Cell::Str(s) => Some(s.trim().parse::<i64>().is_ok()),
        }
    }
}

impl From<&str> for Cell {
    fn from(s: &str) -> Self {
        Cell::Str(s.to_owned())
    }
}

impl From<String> for Cell {
    fn from(s: String) -> Self {
        Cell::Str(s)
    }
}

impl From<i64> for Cell {
    fn from(n: i64) -> Self {
        Cell::Int(n)
    }
}

impl From<bool> for Cell {
    /// Python's `str(True)`.
    fn from(b: bool) -> Self {
        Cell::Str(if b { "True" } else { "False" }.to_owned())
    }
}

/// Renders the table without a trailing newline, like `tabulate.tabulate`.
pub fn render(headers: &[&str], rows: &[Vec<Cell>]) -> String {
    let columns = headers.len();
    let numeric: Vec<bool> = (0..columns)
        .map(|c| {
            let kinds = rows.iter().filter_map(|r| r.get(c).and_then(Cell::is_numeric));
            let mut any = false;
            for is_num in kinds {
                if !is_num {
                    return false;
                }
                any = true;
            }
            any
        })
        .collect();
    let texts: Vec<Vec<String>> =
        rows.iter().map(|r| (0..columns).map(|c| r.get(c).map(Cell::text).unwrap_or_default()).collect()).collect();
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            let cells = texts.iter().map(|r| width(&r[c])).max().unwrap_or(0);
            cells.max(width(headers[c]) + 2)
        })
        .collect();

    let line = |cells: Vec<&str>| -> String {
        let padded: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(c, s)| {
                let fill = " ".repeat(widths[c] - width(s));
                if numeric[c] { format!(" {fill}{s} ") } else { format!(" {s}{fill} ") }
            })
            .collect();
        padded.join("|").trim_end().to_owned()
    };

    let mut out = vec![line(headers.to_vec())];
    out.push(widths.iter().map(|w| "-".repeat(w + 2)).collect::<Vec<_>>().join("+"));
    out.extend(texts.iter().map(|r| line(r.iter().map(String::as_str).collect())));
    out.join("\n")
}

fn width(s: &str) -> usize {
    s.chars().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected strings from tabulate 0.10: tabulate(rows, headers, tablefmt="presto").
    #[test]
    fn matches_tabulate_presto_for_users() {
        let headers = ["User Id", "Username", "Display Name", "Admin", "Agent Uid"];
        let rows = vec![
            vec![1.into(), "admin".into(), "".into(), true.into(), "N/A".into()],
            vec![2.into(), "determined".into(), "Det".into(), false.into(), "N/A".into()],
            vec![12.into(), "x".into(), "a long name".into(), false.into(), "N/A".into()],
        ];
        let expected = "   User Id | Username   | Display Name   | Admin   | Agent Uid\n\
                        -----------+------------+----------------+---------+-------------\n\
                        \x20        1 | admin      |                | True    | N/A\n\
                        \x20        2 | determined | Det            | False   | N/A\n\
                        \x20       12 | x          | a long name    | False   | N/A";
        assert_eq!(render(&headers, &rows), expected);
    }

    #[test]
    fn empty_table_has_header_and_rule() {
        assert_eq!(render(&["A", "B"], &[]), " A   | B\n-----+-----");
    }

    #[test]
    fn trailing_blank_cells_are_stripped() {
        let rows = vec![vec![1.into(), "".into()], vec![2.into(), "".into()]];
        assert_eq!(render(&["Id", "D"], &rows), "   Id | D\n------+-----\n    1 |\n    2 |");
    }

    #[test]
    fn numeric_strings_and_mixed_columns() {
        let rows = vec![vec!["N/A".into(), "5".into()], vec![100.into(), "".into()]];
        assert_eq!(render(&["Id", "D"], &rows), " Id   |   D\n------+-----\n N/A  |   5\n 100  |");
        let rows = vec![vec!["007".into()], vec!["8".into()]];
        assert_eq!(render(&["Id"], &rows), "   Id\n------\n  007\n    8");
        let rows = vec![vec![" a ".into(), (-3).into()], vec!["aé".into(), 7.into()]];
        assert_eq!(render(&["N", "V"], &rows), " N   |   V\n-----+-----\n a   |  -3\n aé  |   7");
    }
}
