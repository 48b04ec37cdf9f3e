//! Interactive input. On a terminal, passwords are read without echo; when stdin is a pipe,
//! each answer is one line of stdin, so scripts can do `echo "$PW" | det user login admin`.

use std::io::{self, BufRead, IsTerminal, Write};

use thiserror::Error;

#[derive(Debug, Error)]
pub enum PromptError {
    #[error("cannot read from the terminal: {0}")]
    Io(#[from] io::Error),
    #[error("Passwords do not match")]
    Mismatch,
}

fn interactive() -> bool {
    io::stdin().is_terminal()
}

/// Reads one line of stdin without its line ending; `None` at end of input.
fn read_line() -> io::Result<Option<String>> {
    let mut line = String::new();
    if io::stdin().lock().read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let trimmed = line.strip_suffix('\n').unwrap_or(&line);
    Ok(Some(trimmed.strip_suffix('\r').unwrap_or(trimmed).to_owned()))
}

/// Asks for visible text such as a username (like Python's `input(prompt)`).
pub fn text(prompt: &str) -> Result<String, PromptError> {
    if interactive() {
        print!("{prompt}");
        io::stdout().flush()?;
    }
    Ok(read_line()?.unwrap_or_default())
}

/// Asks for a password. Piped: one line, and an exhausted stdin means the empty password.
pub fn password(prompt: &str) -> Result<String, PromptError> {
    if interactive() {
        return Ok(rpassword::prompt_password(prompt)?);
    }
    Ok(read_line()?.unwrap_or_default())
}

/// Asks for a new password and its confirmation. Piped: two lines, or a single line that then
/// serves as its own confirmation.
pub fn new_password(prompt: &str) -> Result<String, PromptError> {
    let (first, second) = if interactive() {
        let first = rpassword::prompt_password(prompt)?;
        (first, rpassword::prompt_password("Confirm password: ")?)
    } else {
        let first = read_line()?.unwrap_or_default();
        let second = read_line()?.unwrap_or_else(|| first.clone());
        (first, second)
    };
    if first != second {
        return Err(PromptError::Mismatch);
    }
    Ok(first)
}
