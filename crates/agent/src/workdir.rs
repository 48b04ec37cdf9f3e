//! Per-task work dirs: `<work_root>/<task_id>/<allocation_id>/`, filled from a tar.gz of the model
//! definition (then the task's extra files, [`crate::work_files`]). Extraction is checked whole
//! before anything is written: absolute paths, `..`, special files, links that leave the work dir,
//! and entries written through links are refused.

use std::collections::HashSet;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use flate2::read::GzDecoder;
use tar::{Archive, EntryType};

use crate::config::is_path_component;
use crate::work_files::{WorkFile, write_work_files};

#[derive(Debug, thiserror::Error)]
pub enum WorkDirError {
    #[error("{field} {value:?} cannot name a directory: it must be non-empty and contain no '/', and not be '.' or '..'")]
    InvalidId { field: &'static str, value: String },
    #[error("work dir {0} already exists; another task with the same allocation id ran here, remove it first")]
    AlreadyExists(PathBuf),
    #[error("cannot create work dir {path}: {source}")]
    Create { path: PathBuf, source: std::io::Error },
    #[error("cannot read the work dir archive (expected a tar.gz): {0}")]
    Archive(std::io::Error),
    #[error("work dir archive entry {path:?} is refused: {reason}")]
    UnsafeEntry { path: String, reason: &'static str },
    #[error("cannot extract {path:?} into the work dir: {source}")]
    Extract { path: String, source: std::io::Error },
    #[error("task file {path:?} is refused: {reason}")]
    UnsafeFile { path: String, reason: &'static str },
    #[error("cannot write task file {path:?} into the work dir: {source}")]
    WriteFile { path: String, source: std::io::Error },
    #[error("cannot remove work dir {path}: {source}")]
    Remove { path: PathBuf, source: std::io::Error },
}

/// `<root>/<task_id>/<allocation_id>`, refusing ids that are not plain directory names.
pub fn task_work_dir(root: &Path, task_id: &str, allocation_id: &str) -> Result<PathBuf, WorkDirError> {
    for (field, value) in [("task_id", task_id), ("allocation_id", allocation_id)] {
        if !is_path_component(value) {
            return Err(WorkDirError::InvalidId { field, value: value.to_string() });
        }
    }
    Ok(root.join(task_id).join(allocation_id))
}

/// Creates `dir` (which must not exist yet), extracts `archive` into it and writes `files` over
/// it. Returns the number of archive entries written. On failure nothing is left behind.
pub fn prepare_work_dir(dir: &Path, archive: Option<&[u8]>, files: &[WorkFile]) -> Result<usize, WorkDirError> {
    if dir.exists() {
        return Err(WorkDirError::AlreadyExists(dir.to_path_buf()));
    }
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent).map_err(|source| WorkDirError::Create { path: parent.to_path_buf(), source })?;
    }
    std::fs::create_dir(dir).map_err(|source| WorkDirError::Create { path: dir.to_path_buf(), source })?;
    let filled = match archive {
        Some(archive) => extract_tar_gz(archive, dir),
        None => Ok(0),
    }
    .and_then(|written| write_work_files(dir, files).map(|()| written));
    filled.inspect_err(|_| {
        let _ = std::fs::remove_dir_all(dir);
    })
}

/// Extracts a tar.gz into `dest` after checking every entry; returns the number of entries written.
pub fn extract_tar_gz(archive: &[u8], dest: &Path) -> Result<usize, WorkDirError> {
    check_archive(archive)?;
    let mut tar = Archive::new(GzDecoder::new(archive));
    tar.set_preserve_permissions(false);
    tar.set_overwrite(true);
    let mut written = 0;
    for entry in tar.entries().map_err(WorkDirError::Archive)? {
        let mut entry = entry.map_err(WorkDirError::Archive)?;
        if entry.header().entry_type() == EntryType::XGlobalHeader {
            continue;
        }
        let path = entry_name(&entry);
        // `unpack_in` re-checks that the target stays inside `dest` (after resolving links).
        match entry.unpack_in(dest) {
            Ok(true) => written += 1,
            Ok(false) => return Err(WorkDirError::UnsafeEntry { path, reason: "it would be written outside the work dir" }),
            Err(source) => return Err(WorkDirError::Extract { path, source }),
        }
    }
    Ok(written)
}

/// Validates every entry without writing anything.
fn check_archive(archive: &[u8]) -> Result<(), WorkDirError> {
    let mut tar = Archive::new(GzDecoder::new(archive));
    // Paths of symlinks seen so far: a later entry below one would be written through it.
    let mut links: HashSet<PathBuf> = HashSet::new();
    for entry in tar.entries().map_err(WorkDirError::Archive)? {
        let entry = entry.map_err(WorkDirError::Archive)?;
        let name = entry_name(&entry);
        let refuse = |reason| WorkDirError::UnsafeEntry { path: name.clone(), reason };
        let kind = entry.header().entry_type();
        if kind == EntryType::XGlobalHeader {
            continue;
        }
        let path = entry.path().map_err(|_| refuse("its path is not valid"))?.into_owned();
        let path = relative_path(&path).map_err(refuse)?;
        if path.as_os_str().is_empty() {
            // `./`, the archive's own root, as `tar -C dir .` writes it.
            if kind == EntryType::Directory {
                continue;
            }
            return Err(refuse("its path is empty"));
        }
        if path.ancestors().skip(1).any(|a| links.contains(a)) {
            return Err(refuse("it would be written through a symbolic link"));
        }
        match kind {
            EntryType::Regular | EntryType::Continuous | EntryType::Directory => {}
            EntryType::Symlink => {
                let target = entry.link_name().map_err(|_| refuse("its link target is not valid"))?;
                let target = target.ok_or_else(|| refuse("it is a link without a target"))?;
                let parent = path.parent().unwrap_or(Path::new(""));
                if target.is_absolute() || !stays_inside(&parent.join(&target)) {
                    return Err(refuse("it links outside the work dir"));
                }
                links.insert(path.clone());
            }
            EntryType::Link => {
                let target = entry.link_name().map_err(|_| refuse("its link target is not valid"))?;
                let target = target.ok_or_else(|| refuse("it is a link without a target"))?;
                let target = relative_path(&target).map_err(|_| refuse("it links outside the work dir"))?;
                if target.as_os_str().is_empty() {
                    return Err(refuse("it is a link without a target"));
                }
                if target.ancestors().any(|a| links.contains(a)) {
                    return Err(refuse("it links through a symbolic link"));
                }
            }
            _ => return Err(refuse("only files, directories and links are allowed")),
        }
    }
    Ok(())
}

/// The entry's path as a relative path of plain components (`.` dropped, so `./` is empty), or why not.
fn relative_path(path: &Path) -> Result<PathBuf, &'static str> {
    let mut clean = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => clean.push(part),
            Component::CurDir => {}
            Component::ParentDir => return Err("its path contains '..'"),
            Component::RootDir | Component::Prefix(_) => return Err("its path is absolute"),
        }
    }
    Ok(clean)
}

/// True when the relative `path`, with `..` applied lexically, never climbs above its root.
fn stays_inside(path: &Path) -> bool {
    let mut depth = 0usize;
    for component in path.components() {
        match component {
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::ParentDir => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return false,
            },
            Component::RootDir | Component::Prefix(_) => return false,
        }
    }
    true
}

fn entry_name<R: Read>(entry: &tar::Entry<'_, R>) -> String {
    String::from_utf8_lossy(&entry.path_bytes()).into_owned()
}

/// Removes a task's work dir, and its `<task_id>` parent when that is left empty. A dir that is
/// already gone is not an error.
pub fn remove_work_dir(dir: &Path) -> Result<(), WorkDirError> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => return Err(WorkDirError::Remove { path: dir.to_path_buf(), source }),
    }
    if let Some(task_dir) = dir.parent() {
        // Fails while another allocation of the task still has its dir; that is expected.
        let _ = std::fs::remove_dir(task_dir);
    }
    Ok(())
}

/// Removes what the upstream harness leaves in `root` (it hard-codes `/tmp`) for one allocation:
/// `tensorboard-<allocation_id>-<rank>` dirs of TensorBoard event files, which the harness has synced
/// to checkpoint storage before it exits. A container would discard them; a host process does not.
/// Links and names that only share the prefix are left alone. Returns how many dirs were removed.
pub fn remove_harness_scratch(root: &Path, allocation_id: &str) -> std::io::Result<usize> {
    let prefix = format!("tensorboard-{allocation_id}-");
    let mut removed = 0;
    for entry in std::fs::read_dir(root)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(rank) = name.to_str().and_then(|n| n.strip_prefix(prefix.as_str())) else { continue };
        let is_rank = !rank.is_empty() && rank.bytes().all(|b| b.is_ascii_digit());
        // `file_type` does not follow links: a link planted in /tmp is never followed.
        if !is_rank || !entry.file_type()?.is_dir() {
            continue;
        }
        match std::fs::remove_dir_all(entry.path()) {
            Ok(()) => removed += 1,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_must_be_plain_names() {
        let root = Path::new("/r");
        assert_eq!(task_work_dir(root, "t.1", "t.1.a").unwrap(), Path::new("/r/t.1/t.1.a"));
        assert!(matches!(task_work_dir(root, "..", "a"), Err(WorkDirError::InvalidId { field: "task_id", .. })));
        assert!(matches!(task_work_dir(root, "t", "a/b"), Err(WorkDirError::InvalidId { field: "allocation_id", .. })));
    }

    #[test]
    fn harness_scratch_of_one_allocation_is_removed() {
        let root = tempfile::tempdir().unwrap();
        let mk = |name: &str| std::fs::create_dir_all(root.path().join(name).join("events")).unwrap();
        for name in ["tensorboard-7.ab.1-0", "tensorboard-7.ab.1-12", "tensorboard-7.ab.1-x", "tensorboard-7.ab.10-0"] {
            mk(name);
        }
        std::fs::write(root.path().join("tensorboard-7.ab.1-3"), b"a file").unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("tensorboard-7.ab.1-4")).unwrap();

        assert_eq!(remove_harness_scratch(root.path(), "7.ab.1").unwrap(), 2);
        let mut left: Vec<String> =
            std::fs::read_dir(root.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        left.sort();
        assert_eq!(left, ["tensorboard-7.ab.1-3", "tensorboard-7.ab.1-4", "tensorboard-7.ab.1-x", "tensorboard-7.ab.10-0"]);
        assert!(outside.path().exists());
        assert_eq!(remove_harness_scratch(root.path(), "7.ab.1").unwrap(), 0);
    }

    #[test]
    fn lexical_containment() {
        assert!(stays_inside(Path::new("a/../b")));
        assert!(stays_inside(Path::new("a/b/../../c")));
        assert!(!stays_inside(Path::new("a/../../b")));
        assert_eq!(relative_path(Path::new("./a/./b")).unwrap(), Path::new("a/b"));
        assert!(relative_path(Path::new("/etc/passwd")).is_err());
        assert!(relative_path(Path::new("a/../b")).is_err());
        assert!(relative_path(Path::new("./")).unwrap().as_os_str().is_empty());
    }
}
