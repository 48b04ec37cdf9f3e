//! The model definition upload: a context directory (plus `--include`s) turned into the `v1File`
//! list that `POST /api/v1/experiments` takes, exactly as upstream's `common/context.py` and
//! `detignore.py` build it: `os.walk` order (a directory's subdirectories, then its files, then
//! each subdirectory's contents), `.detignore` with gitignore syntax under upstream's defaults,
//! and the 95 MiB limit on the decoded content.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use resolute_api::files::{FILE_TYPE_DIRECTORY, FILE_TYPE_REGULAR, File};
use thiserror::Error;

use crate::output::sizeof_fmt;

/// Upstream's `MAX_CONTEXT_SIZE`: 6/8 of the 128 MiB message limit, less 1 MiB of envelope.
pub const MAX_CONTEXT_SIZE: u64 = (128 * 1024 * 1024 / 8) * 6 - 1024 * 1024;

/// Upstream's `DEFAULT_DETIGNORE`, applied before the user's `.detignore`.
const DEFAULT_DETIGNORE: [&str; 13] = [
    "__pycache__/",
    "*.py[co]",
    "*$py.class",
    "terraform",
    "terraform_data",
    "terraform.tfstate*",
    "terraform.tfvars*",
    ".terraform*",
    ".git/",
    ".vscode/",
    ".idea/",
    ".mypy_cache/",
    "/shared_fs",
];

#[derive(Debug, Error)]
pub enum ContextError {
    #[error("Path '{0}' doesn't exist")]
    Missing(String),
    #[error("context path '{0}' must be a directory, maybe use an include instead?")]
    NotADirectory(String),
    #[error("unable to determine the name of include '{0}'")]
    Unnamed(String),
    #[error(
        "The total size of context directory and included files and directories exceeds  the maximum allowed size {}.\n\
         Consider using either .detignore files inside directories to specify that certain files or subdirectories should be omitted.",
        sizeof_fmt(*limit as f64)
    )]
    TooLarge { limit: u64 },
    #[error("duplicate path detected: '{0}'")]
    Duplicate(String),
    #[error("duplicate paths detected: {0}")]
    Duplicates(String),
    #[error("cannot read {path}: {cause}")]
    Io { path: String, cause: String },
    #[error("invalid .detignore in {path}: {cause}")]
    Detignore { path: String, cause: String },
}

/// Accumulates files, enforcing the limit and printing upstream's progress line to `progress`.
struct Builder<'w> {
    limit: u64,
    size: u64,
    items: Vec<File>,
    msg: String,
    progress: &'w mut dyn Write,
}

impl Builder<'_> {
    fn add_file(&mut self, file: File) -> Result<(), ContextError> {
        // Upstream measures the base64 text: `len(content) // 4 * 3`.
        self.size += (file.content.len() / 4 * 3) as u64;
        self.items.push(file);
        if self.size > self.limit {
            return Err(ContextError::TooLarge { limit: self.limit });
        }
        Ok(())
    }

    fn update_msg(&mut self) {
        let blank = " ".repeat(self.msg.chars().count());
        self.msg = format!("Preparing files to send to master... {} and {} files", sizeof_fmt(self.size as f64), self.items.len());
        let _ = write!(self.progress, "{blank}\r{}\r", self.msg);
        let _ = self.progress.flush();
    }

    /// `_Builder.add`: a file becomes one entry; a directory is walked, and named by `prefix`
    /// unless it is the context root (empty prefix).
    fn add(&mut self, root: &Path, prefix: &str) -> Result<(), ContextError> {
        let root = std::fs::canonicalize(root).map_err(|_| ContextError::Missing(absolute(root)))?;
        if root.is_file() {
            let name = root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            return self.add_file(regular_file(&name, &root)?);
        }
        if !prefix.is_empty() {
            self.add_file(directory(prefix, &root)?)?;
        }
        let ignore = detignore(&root)?;
        self.walk(&root, &root, prefix, &ignore)
    }

    fn walk(&mut self, root: &Path, dir: &Path, prefix: &str, ignore: &Gitignore) -> Result<(), ContextError> {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).map_err(|e| io_error(dir, &e))?.flatten().map(|e| e.path()).collect();
        entries.sort();
        // As `os.walk`: symlinks to directories are listed with the directories (stat follows
        // them) but not descended into.
        let (dirs, files): (Vec<PathBuf>, Vec<PathBuf>) = entries.into_iter().partition(|p| p.is_dir());
        let mut keep = Vec::new();
        for d in dirs {
            let rel = relative(root, &d);
            if ignore.matched(&rel, true).is_ignore() {
                continue;
            }
            self.add_file(directory(&entry_path(prefix, &rel), &d)?)?;
            self.update_msg();
            keep.push(d);
        }
        for f in files {
            let rel = relative(root, &f);
            if f.file_name().is_some_and(|n| n == ".detignore") || ignore.matched(&rel, false).is_ignore() {
                continue;
            }
            let path = entry_path(prefix, &rel);
            match regular_file(&path, &f) {
                Ok(file) => self.add_file(file)?,
                Err(_) => {
                    let _ = writeln!(self.progress, "Error reading '{path}', skipping this file.");
                    continue;
                }
            }
            self.update_msg();
        }
        for d in keep {
            if !d.is_symlink() {
                self.walk(root, &d, prefix, ignore)?;
            }
        }
        Ok(())
    }

    fn finish(self) -> Result<Vec<File>, ContextError> {
        let _ = writeln!(self.progress);
        let mut roots: BTreeMap<&str, usize> = BTreeMap::new();
        let mut order = Vec::new();
        for f in &self.items {
            let p = f.path.trim_end_matches('/');
            if !p.contains('/') {
                let n = roots.entry(p).or_insert(0);
                *n += 1;
                if *n == 2 {
                    order.push(p);
                }
            }
        }
        match order.as_slice() {
            [] => Ok(self.items),
            [one] => Err(ContextError::Duplicate((*one).to_owned())),
            many => Err(ContextError::Duplicates(format!("[{}]", many.iter().map(|p| format!("'{p}'")).collect::<Vec<_>>().join(", ")))),
        }
    }
}

/// `context.read_v1_context`: the context directory's files (paths relative to it), then each
/// include under its own name. Progress goes to `progress` (stdout for the CLI).
pub fn read_v1_context(root: Option<&Path>, includes: &[PathBuf], limit: u64, progress: &mut dyn Write) -> Result<Vec<File>, ContextError> {
    if root.is_none() && includes.is_empty() {
        return Ok(Vec::new());
    }
    let msg = format!("Preparing files to send to master... {} and 0 files", sizeof_fmt(0.0));
    let _ = write!(progress, "{msg}\r");
    let mut builder = Builder { limit, size: 0, items: Vec::new(), msg, progress };
    if let Some(root) = root {
        if root.is_file() {
            return Err(ContextError::NotADirectory(root.display().to_string()));
        }
        builder.add(root, "")?;
    }
    for include in includes {
        let resolved = std::fs::canonicalize(include).unwrap_or_else(|_| PathBuf::from(absolute(include)));
        let Some(name) = resolved.file_name().map(|n| n.to_string_lossy().into_owned()) else {
            return Err(ContextError::Unnamed(include.display().to_string()));
        };
        builder.add(include, &name)?;
    }
    builder.finish()
}

/// Upstream's defaults plus the root's `.detignore` (only the root's, as upstream).
fn detignore(root: &Path) -> Result<Gitignore, ContextError> {
    let mut builder = GitignoreBuilder::new(root);
    let bad = |e: ignore::Error| ContextError::Detignore { path: root.display().to_string(), cause: e.to_string() };
    for line in DEFAULT_DETIGNORE {
        builder.add_line(None, line).map_err(bad)?;
    }
    let path = root.join(".detignore");
    if path.is_file() {
        let text = std::fs::read_to_string(&path).map_err(|e| io_error(&path, &e))?;
        for line in text.lines() {
            builder.add_line(Some(path.clone()), line).map_err(bad)?;
        }
    }
    builder.build().map_err(bad)
}

fn regular_file(archive_path: &str, path: &Path) -> Result<File, ContextError> {
    let bytes = std::fs::read(path).map_err(|e| io_error(path, &e))?;
    let meta = std::fs::metadata(path).map_err(|e| io_error(path, &e))?;
    Ok(v1_file(archive_path, FILE_TYPE_REGULAR, base64::engine::general_purpose::STANDARD.encode(bytes), &meta))
}

fn directory(archive_path: &str, path: &Path) -> Result<File, ContextError> {
    let meta = std::fs::metadata(path).map_err(|e| io_error(path, &e))?;
    Ok(v1_file(archive_path, FILE_TYPE_DIRECTORY, String::new(), &meta))
}

fn v1_file(path: &str, file_type: i32, content: String, meta: &std::fs::Metadata) -> File {
    // st_mode fits in 32 bits (file type + permission bits).
    let mode = i32::try_from(meta.mode()).unwrap_or(i32::MAX);
    File { path: path.to_owned(), file_type, content, mtime: meta.mtime(), mode, uid: 0, gid: 0 }
}

/// `/`-joined path of `path` under `root`.
fn relative(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect::<Vec<_>>().join("/")
}

fn entry_path(prefix: &str, rel: &str) -> String {
    if prefix.is_empty() { rel.to_owned() } else { format!("{prefix}/{rel}") }
}

fn absolute(path: &Path) -> String {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()).display().to_string()
}

fn io_error(path: &Path, err: &std::io::Error) -> ContextError {
    ContextError::Io { path: path.display().to_string(), cause: err.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, content: &str) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    fn paths(root: &Path, includes: &[PathBuf]) -> Vec<String> {
        let mut sink = Vec::new();
        read_v1_context(Some(root), includes, MAX_CONTEXT_SIZE, &mut sink).unwrap().into_iter().map(|f| f.path).collect()
    }

    #[test]
    fn walks_like_os_walk_and_honours_detignore() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "train.py", "print('hi')\n");
        write(root, "a/b/deep.txt", "x");
        write(root, "a/one.txt", "1");
        write(root, "z.txt", "z");
        write(root, "__pycache__/m.pyc", "junk");
        write(root, "x.pyc", "junk");
        write(root, ".git/HEAD", "ref");
        write(root, "data/big.bin", "big");
        write(root, "data/keep.txt", "keep");
        write(root, "logs/run.log", "log");
        write(root, ".detignore", "data/*\n!data/keep.txt\n*.log\n# comment\n");
        assert_eq!(paths(root, &[]), ["a", "data", "logs", "train.py", "z.txt", "a/b", "a/one.txt", "a/b/deep.txt", "data/keep.txt"]);
    }

    #[test]
    fn encodes_files_as_upstream() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "m.py", "hello");
        write(dir.path(), "sub/x", "");
        let mut sink = Vec::new();
        let files = read_v1_context(Some(dir.path()), &[], MAX_CONTEXT_SIZE, &mut sink).unwrap();
        let json = serde_json::to_value(&files).unwrap();
        assert_eq!(json[0]["path"], "sub");
        assert_eq!(json[0]["type"], 53);
        assert_eq!(json[0]["content"], "");
        assert_eq!(json[0]["mode"].as_i64().unwrap() & 0o170000, 0o040000);
        assert_eq!(json[1]["path"], "m.py");
        assert_eq!(json[1]["type"], 48);
        assert_eq!(json[1]["content"], "aGVsbG8=");
        assert!(json[1]["mtime"].is_string());
        assert_eq!((json[1]["uid"].clone(), json[1]["gid"].clone()), (0.into(), 0.into()));
        let text = String::from_utf8(sink).unwrap();
        assert!(text.starts_with("Preparing files to send to master... 0.0B and 0 files\r"), "{text:?}");
        assert!(text.ends_with("Preparing files to send to master... 6.0B and 3 files\r\n"), "{text:?}");
    }

    #[test]
    fn includes_are_named_and_duplicates_rejected() {
        let ctx = tempfile::tempdir().unwrap();
        let extra = tempfile::tempdir().unwrap();
        write(ctx.path(), "m.py", "x");
        write(extra.path(), "lib/util.py", "y");
        let lib = extra.path().join("lib");
        assert_eq!(paths(ctx.path(), std::slice::from_ref(&lib)), ["m.py", "lib", "lib/util.py"]);
        write(ctx.path(), "lib/other.py", "z");
        let mut sink = Vec::new();
        let err = read_v1_context(Some(ctx.path()), &[lib], MAX_CONTEXT_SIZE, &mut sink).unwrap_err();
        assert_eq!(err.to_string(), "duplicate path detected: 'lib'");
    }

    #[test]
    fn limit_and_missing_paths_fail_with_upstream_messages() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "big", &"x".repeat(3000));
        let mut sink = Vec::new();
        let err = read_v1_context(Some(dir.path()), &[], 2048, &mut sink).unwrap_err();
        assert!(err.to_string().starts_with(
            "The total size of context directory and included files and directories exceeds  the maximum allowed size 2.0KB."
        ));
        let err = read_v1_context(Some(&dir.path().join("nope")), &[], 2048, &mut sink).unwrap_err();
        assert!(err.to_string().starts_with("Path '/") && err.to_string().ends_with("nope' doesn't exist"), "{err}");
        let err = read_v1_context(Some(&dir.path().join("big")), &[], 2048, &mut sink).unwrap_err();
        assert!(err.to_string().contains("must be a directory"), "{err}");
        assert_eq!(MAX_CONTEXT_SIZE, 95 * 1024 * 1024);
    }
}
