//! Tables in python-tabulate's `presto` format, which upstream uses for every listing.
//!
//! The rules that matter for compatibility, checked against tabulate 0.9/0.10:
//! - a column whose non-empty cells are all integers is right-aligned (header too), any other
//!   column is left-aligned;
//! - column width is `max(widest cell, header + 2)`, plus one space of padding on each side;
//! - cells are trimmed, and trailing whitespace is stripped from every line.

/// One table cell. Strings that parse as numbers count as numbers, like tabulate's `numparse`.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Int(i64),
    Float(f64),
    Str(String),
}

/// How tabulate types a column: ints right-aligned, floats (`%g`) aligned on the decimal point,
/// anything else left-aligned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Int,
    Float,
    Text,
}

impl Cell {
    /// `Cell::Str("")` for `None`: tabulate's `missingval`.
    pub fn opt<T: Into<Cell>>(value: Option<T>) -> Cell {
        value.map_or(Cell::Str(String::new()), Into::into)
    }

    fn text(&self, kind: Kind) -> String {
        match self {
            Cell::Int(n) => n.to_string(),
            Cell::Float(f) => format_g(*f),
            Cell::Str(s) if kind == Kind::Float => s.trim().parse::<f64>().map_or_else(|_| s.trim().to_owned(), format_g),
            Cell::Str(s) => s.trim().to_owned(),
        }
    }

    /// `None` for empty cells, which are ignored when typing a column.
    fn kind(&self) -> Option<Kind> {
        match self {
            Cell::Int(_) => Some(Kind::Int),
            Cell::Float(_) => Some(Kind::Float),
            Cell::Str(s) if s.trim().is_empty() => None,
            Cell::Str(s) if s.trim().parse::<i64>().is_ok() => Some(Kind::Int),
            Cell::Str(s) if is_python_float(s.trim()) => Some(Kind::Float),
            Cell::Str(_) => Some(Kind::Text),
        }
    }
}

/// What Python's `float()` accepts, near enough: Rust's parser plus no letters other than the
/// exponent and `inf`/`nan`.
fn is_python_float(s: &str) -> bool {
    s.parse::<f64>().is_ok() && !s.contains('\n')
}

/// Python's `format(x, "g")`: 6 significant digits, trailing zeros dropped, scientific notation
/// below 1e-4 and from 1e6.
pub fn format_g(x: f64) -> String {
    if x.is_nan() {
        return "nan".to_owned();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.to_owned();
    }
    let sci = format!("{x:.5e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..6).contains(&exp) {
        let decimals = usize::try_from(5 - exp).unwrap_or(0);
        strip_zeros(&format!("{x:.decimals$}"))
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", strip_zeros(mantissa), exp.abs())
    }
}

fn strip_zeros(s: &str) -> String {
    if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_owned() } else { s.to_owned() }
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

impl From<i32> for Cell {
    fn from(n: i32) -> Self {
        Cell::Int(i64::from(n))
    }
}

impl From<f64> for Cell {
    fn from(f: f64) -> Self {
        Cell::Float(f)
    }
}

impl From<bool> for Cell {
    /// Python's `str(True)`.
    fn from(b: bool) -> Self {
        Cell::Str(if b { "True" } else { "False" }.to_owned())
    }
}

/// Renders the table without a trailing newline, like `tabulate.tabulate`. Cells may span
/// several lines (e.g. indented JSON); the row then grows, as tabulate's multiline mode does.
pub fn render(headers: &[&str], rows: &[Vec<Cell>]) -> String {
    let columns = headers.len();
    let kinds: Vec<Kind> =
        (0..columns).map(|c| rows.iter().filter_map(|r| r.get(c).and_then(Cell::kind)).max().unwrap_or(Kind::Text)).collect();
    let texts: Vec<Vec<String>> =
        rows.iter().map(|r| (0..columns).map(|c| r.get(c).map(|cell| cell.text(kinds[c])).unwrap_or_default()).collect()).collect();
    // Decimal alignment pads each float on the right so the points line up (ints count as -1).
    let decimals: Vec<usize> = (0..columns)
        .map(|c| if kinds[c] == Kind::Float { texts.iter().filter_map(|r| after_point(&r[c])).max().unwrap_or(0) } else { 0 })
        .collect();
    let texts: Vec<Vec<String>> = texts
        .into_iter()
        .map(|r| {
            r.into_iter()
                .enumerate()
                .map(|(c, s)| {
                    if kinds[c] != Kind::Float || s.is_empty() {
                        return s;
                    }
                    let pad = match after_point(&s) {
                        Some(d) => decimals[c] - d,
                        None => decimals[c] + 1,
                    };
                    format!("{s}{}", " ".repeat(pad))
                })
                .collect()
        })
        .collect();
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            let cells = texts.iter().flat_map(|r| r[c].lines().map(width)).max().unwrap_or(0);
            cells.max(width(headers[c]) + 2)
        })
        .collect();

    let line = |cells: Vec<&str>| -> String {
        let padded: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(c, s)| {
                let fill = " ".repeat(widths[c] - width(s));
                if kinds[c] == Kind::Text { format!(" {s}{fill} ") } else { format!(" {fill}{s} ") }
            })
            .collect();
        padded.join("|").trim_end().to_owned()
    };

    let mut out = vec![line(headers.to_vec())];
    out.push(widths.iter().map(|w| "-".repeat(w + 2)).collect::<Vec<_>>().join("+"));
    for row in &texts {
        let split: Vec<Vec<&str>> = row.iter().map(|s| s.split('\n').collect()).collect();
        let height = split.iter().map(Vec::len).max().unwrap_or(1);
        for i in 0..height {
            out.push(line(split.iter().map(|l| l.get(i).copied().unwrap_or("")).collect()));
        }
    }
    out.join("\n")
}

/// Digits after the decimal point (or exponent marker) of a float's text; `None` for integers.
fn after_point(s: &str) -> Option<usize> {
    let s = s.trim_end();
    if s.parse::<i64>().is_ok() {
        return None;
    }
    let pos = s.rfind('.').or_else(|| s.to_lowercase().rfind('e'))?;
    Some(s.len() - pos - 1)
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

    // Expected strings from tabulate 0.10 (presto).
    #[test]
    fn multiline_cells_grow_the_row() {
        let rows = vec![vec![" x\n  y ".into(), 5.into(), "a".into()], vec!["b\n".into(), 12.into(), " c ".into()]];
        assert_eq!(render(&["H", "N", "Z"], &rows), " H   |   N | Z\n-----+-----+-----\n x   |   5 | a\n   y |     |\n b   |  12 | c");
    }

    #[test]
    fn floats_align_on_the_decimal_point() {
        let rows = vec![vec!["".into(), 1.5.into(), 2.into()], vec!["b".into(), 3.into(), "".into()]];
        assert_eq!(render(&["H", "F", "I"], &rows), " H   |   F |   I\n-----+-----+-----\n     | 1.5 |   2\n b   | 3   |");
        let rows = vec![vec!["0.123456789".into()], vec![1e-7.into()], vec![1234567.0.into()]];
        assert_eq!(render(&["V"], &rows), "           V\n-------------\n 0.123457\n 1e-07\n 1.23457e+06");
    }

    #[test]
    fn formats_like_python_g() {
        assert_eq!(format_g(0.5), "0.5");
        assert_eq!(format_g(100.0), "100");
        assert_eq!(format_g(0.0001), "0.0001");
        assert_eq!(format_g(0.00001234), "1.234e-05");
        assert_eq!(format_g(999999.5), "1e+06");
        assert_eq!(format_g(-2.5), "-2.5");
    }
}
