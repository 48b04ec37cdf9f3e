//! Extra files the master sends with a task (`StartTask.files`: an sshd host key and
//! `authorized_keys`, a Jupyter config, …), written into the work dir after the archive is
//! extracted. The archive's rules apply: a path must be relative and free of `..` (checked when the
//! file is accepted), and nothing is written through a symbolic link the archive created.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use crate::workdir::WorkDirError;

/// One file for the work dir, its path already checked to be relative and without `..`.
#[derive(Clone, PartialEq, Eq)]
pub struct WorkFile {
    path: PathBuf,
    content: Vec<u8>,
    mode: u32,
}

impl std::fmt::Debug for WorkFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Contents may be keys.
        f.debug_struct("WorkFile")
            .field("path", &self.path)
            .field("bytes", &self.content.len())
            .field("mode", &format_args!("{:o}", self.mode))
            .finish()
    }
}

impl WorkFile {
    /// Accepts `path` (relative to the work dir) or says why not. Only the permission bits of
    /// `mode` are kept.
    pub fn new(path: &str, content: Vec<u8>, mode: u32) -> Result<WorkFile, WorkDirError> {
        let refuse = |reason| WorkDirError::UnsafeFile { path: path.to_string(), reason };
        if path.contains('\0') {
            return Err(refuse("its path contains a NUL byte"));
        }
        let mut clean = PathBuf::new();
        for component in Path::new(path).components() {
            match component {
                Component::Normal(part) => clean.push(part),
                Component::CurDir => {}
                Component::ParentDir => return Err(refuse("its path contains '..'")),
                Component::RootDir | Component::Prefix(_) => return Err(refuse("its path is absolute")),
            }
        }
        if clean.as_os_str().is_empty() {
            return Err(refuse("its path names no file"));
        }
        Ok(WorkFile { path: clean, content, mode: mode & 0o7777 })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Writes `files` into `dir` in order (a later file with the same path wins), creating parent
/// directories. Refuses to write through, or over, a symbolic link.
pub fn write_work_files(dir: &Path, files: &[WorkFile]) -> Result<(), WorkDirError> {
    for file in files {
        write_one(dir, file)?;
    }
    Ok(())
}

fn write_one(dir: &Path, file: &WorkFile) -> Result<(), WorkDirError> {
    let name = file.path.to_string_lossy().into_owned();
    let refuse = |reason| WorkDirError::UnsafeFile { path: name.clone(), reason };
    let io = |source| WorkDirError::WriteFile { path: name.clone(), source };
    let parts: Vec<_> = file.path.components().collect();
    let Some((last, parents)) = parts.split_last() else { return Err(refuse("its path names no file")) };
    let mut current = dir.to_path_buf();
    for part in parents {
        current.push(part);
        match std::fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => return Err(refuse("it would be written through a symbolic link")),
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => return Err(refuse("one of its parents is a file, not a directory")),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => std::fs::create_dir(&current).map_err(io)?,
            Err(e) => return Err(io(e)),
        }
    }
    current.push(last);
    match std::fs::symlink_metadata(&current) {
        Ok(meta) if meta.file_type().is_symlink() => return Err(refuse("a symbolic link is already at its path")),
        Ok(meta) if meta.is_dir() => return Err(refuse("a directory is already at its path")),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io(e)),
    }
    let mut out = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(file.mode).open(&current).map_err(io)?;
    out.write_all(&file.content).map_err(io)?;
    // The mode given at creation is masked by the umask and ignored for an existing file.
    out.set_permissions(std::fs::Permissions::from_mode(file.mode)).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_must_stay_below_the_work_dir() {
        for (path, reason) in [
            ("/etc/passwd", "absolute"),
            ("a/../../x", "'..'"),
            ("..", "'..'"),
            ("", "names no file"),
            ("./", "names no file"),
            ("a\0b", "NUL"),
        ] {
            let err = WorkFile::new(path, vec![], 0o644).unwrap_err().to_string();
            assert!(err.contains(reason), "{path:?}: {err}");
        }
        assert_eq!(WorkFile::new("./a/./b", vec![], 0o100600).unwrap(), WorkFile { path: "a/b".into(), content: vec![], mode: 0o600 });
    }

    #[test]
    fn files_land_with_their_mode_and_never_through_links() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("existing"), b"old").unwrap();
        let files =
            [WorkFile::new("ssh/host_key", b"key".to_vec(), 0o600).unwrap(), WorkFile::new("existing", b"new".to_vec(), 0o755).unwrap()];
        write_work_files(dir.path(), &files).unwrap();
        let meta = std::fs::metadata(dir.path().join("ssh/host_key")).unwrap();
        assert_eq!(meta.permissions().mode() & 0o7777, 0o600);
        assert_eq!(std::fs::read(dir.path().join("existing")).unwrap(), b"new");
        assert_eq!(std::fs::metadata(dir.path().join("existing")).unwrap().permissions().mode() & 0o7777, 0o755);

        std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("target"), dir.path().join("file_link")).unwrap();
        for path in ["link/x", "file_link", "ssh/host_key/x"] {
            let err = write_work_files(dir.path(), &[WorkFile::new(path, b"x".to_vec(), 0o644).unwrap()]).unwrap_err();
            assert!(matches!(err, WorkDirError::UnsafeFile { .. }), "{path}: {err}");
        }
        assert!(std::fs::read_dir(outside.path()).unwrap().next().is_none());
    }
}
