//! [`FileGlobs`]: which of a checkpoint's files a `POST /api/v1/checkpoints/rm` removes. As the
//! harness's `pathlib.Path(checkpoint).glob(pattern)` does: patterns are relative to the
//! checkpoint, `*` and `?` stay within one path segment, `**` spans any number of them, and a
//! pattern that names a directory removes everything below it. The same rule serves directories
//! and buckets (whose "directories" are key prefixes).

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// A set of checkpoint-relative glob patterns.
#[derive(Clone, Debug)]
pub struct FileGlobs {
    set: GlobSet,
}

/// A pattern that cannot select checkpoint files: its index in the request and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadGlob {
    pub index: usize,
    pub reason: String,
}

impl FileGlobs {
    /// Parses the patterns; an empty one, an absolute one or one with a `..` segment (which would
    /// reach outside the checkpoint) is refused, as is one that is not a glob.
    pub fn parse(patterns: &[String]) -> Result<Self, BadGlob> {
        let mut builder = GlobSetBuilder::new();
        for (index, pattern) in patterns.iter().enumerate() {
            let bad = |reason: String| BadGlob { index, reason };
            let trimmed = pattern.trim_start_matches("./");
            if trimmed.is_empty() {
                return Err(bad("must not be empty".to_owned()));
            }
            if trimmed.starts_with('/') {
                return Err(bad(format!("{pattern:?} must be relative to the checkpoint, not absolute")));
            }
            if trimmed.split('/').any(|segment| segment == "..") {
                return Err(bad(format!("{pattern:?} must not contain a `..` segment")));
            }
            let glob = GlobBuilder::new(trimmed.trim_end_matches('/'))
                .literal_separator(true)
                .backslash_escape(true)
                .build()
                .map_err(|e| bad(format!("{pattern:?} is not a glob pattern: {}", e.kind())))?;
            builder.add(glob);
        }
        let set = builder.build().map_err(|e| BadGlob { index: 0, reason: e.to_string() })?;
        Ok(FileGlobs { set })
    }

    /// Whether the file (`/`-separated, relative to the checkpoint) or one of the directories
    /// holding it matches a pattern.
    pub fn selects(&self, relative: &str) -> bool {
        let relative = relative.trim_end_matches('/');
        relative.match_indices('/').map(|(i, _)| &relative[..i]).chain(std::iter::once(relative)).any(|path| self.set.is_match(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn globs(patterns: &[&str]) -> FileGlobs {
        FileGlobs::parse(&patterns.iter().map(|p| (*p).to_owned()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn patterns_select_files_and_whole_directories() {
        let files = ["metadata.json", "model/w.bin", "model/opt/state.bin", "logs/a.txt", "code/train.py"];
        let picked = |patterns: &[&str]| -> Vec<&str> {
            let g = globs(patterns);
            files.iter().copied().filter(|f| g.selects(f)).collect()
        };
        assert_eq!(picked(&["*.json"]), ["metadata.json"], "`*` stays in the top directory");
        assert_eq!(picked(&["model"]), ["model/w.bin", "model/opt/state.bin"], "a directory takes its contents");
        assert_eq!(picked(&["model/*.bin"]), ["model/w.bin"]);
        assert_eq!(picked(&["**/*.bin"]), ["model/w.bin", "model/opt/state.bin"]);
        assert_eq!(picked(&["./logs/", "code/*"]), ["logs/a.txt", "code/train.py"]);
        assert_eq!(picked(&["*"]).len(), files.len(), "`*` matches every top-level entry");
        assert!(picked(&["nothing*"]).is_empty());
        assert!(picked(&[]).is_empty());
    }

    #[test]
    fn bad_patterns_are_named_by_index() {
        let parse = |patterns: &[&str]| FileGlobs::parse(&patterns.iter().map(|p| (*p).to_owned()).collect::<Vec<_>>());
        assert_eq!(parse(&["ok", ""]).unwrap_err().index, 1);
        assert!(parse(&["/etc/*"]).unwrap_err().reason.contains("relative"));
        assert!(parse(&["model/../../x"]).unwrap_err().reason.contains(".."));
        assert!(parse(&["model/[a"]).unwrap_err().reason.contains("not a glob"));
    }
}
