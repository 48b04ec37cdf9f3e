//! Model definitions: the upstream CLI uploads an experiment's context directory as a list of
//! files (base64 content, tar metadata); the master checks every entry and keeps them as one
//! tar.gz archive, as upstream does, which `model_def` hands back and tasks will unpack.

use std::io::Write;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use flate2::Compression;
use flate2::write::GzEncoder;
use resolute_api::error::ErrorCode;
use tar::{EntryType, Header};

use crate::error::{ApiError, ApiResult};

/// Upstream's limit on a context directory's decoded size: the 96 MiB gRPC message limit less
/// 1 MiB of headroom (the CLI's `MAX_CONTEXT_SIZE`).
pub const MAX_MODEL_DEF_BYTES: usize = 95 * 1024 * 1024;

/// The tar type flags the upstream CLI sends: `'0'` regular file, `'5'` directory.
pub const TYPE_REGULAR: i32 = b'0' as i32;
pub const TYPE_DIRECTORY: i32 = b'5' as i32;

/// A file as the client sent it; `content` is still base64.
#[derive(Clone, Debug)]
pub struct ContextFile {
    pub path: String,
    /// Tar type flag: [`TYPE_REGULAR`] or [`TYPE_DIRECTORY`].
    pub type_flag: i32,
    pub content: String,
    pub mtime: i64,
    pub mode: i32,
    pub uid: i32,
    pub gid: i32,
}

/// Checks the entries and packs them into a tar.gz. CPU-bound (up to 95 MiB to compress): call
/// it off the async threads.
pub fn build_archive(files: &[ContextFile]) -> ApiResult<Vec<u8>> {
    check_size(files)?;
    let mut tar = tar::Builder::new(GzEncoder::new(Vec::new(), Compression::default()));
    for (index, file) in files.iter().enumerate() {
        let path = checked_path(index, &file.path)?;
        let is_dir = match file.type_flag {
            TYPE_DIRECTORY => true,
            TYPE_REGULAR => false,
            other => {
                return Err(ApiError::invalid(format!(
                    "modelDefinition[{index}] ({path}): type {other} is not supported; expected {TYPE_REGULAR} (file) or {TYPE_DIRECTORY} (directory)"
                )));
            }
        };
        let data = if is_dir {
            Vec::new()
        } else {
            BASE64
                .decode(file.content.trim())
                .map_err(|e| ApiError::invalid(format!("modelDefinition[{index}] ({path}): content is not valid base64: {e}")))?
        };
        let mut header = Header::new_gnu();
        header.set_entry_type(if is_dir { EntryType::Directory } else { EntryType::Regular });
        header.set_size(data.len() as u64);
        header.set_mtime(u64::try_from(file.mtime).unwrap_or(0));
        let permissions = u32::try_from(file.mode).unwrap_or(0) & 0o7777;
        header.set_mode(match permissions {
            0 if is_dir => 0o755,
            0 => 0o644,
            p => p,
        });
        header.set_uid(u64::try_from(file.uid).unwrap_or(0));
        header.set_gid(u64::try_from(file.gid).unwrap_or(0));
        let name = if is_dir { format!("{path}/") } else { path.clone() };
        tar.append_data(&mut header, &name, data.as_slice())
            .map_err(|e| ApiError::invalid(format!("modelDefinition[{index}] ({path}): cannot be archived: {e}")))?;
    }
    let archive = tar.into_inner().and_then(|mut gz| {
        gz.flush()?;
        gz.finish()
    });
    archive.map_err(|e| {
        tracing::error!(error = %e, "building a model definition archive in memory failed");
        ApiError::internal()
    })
}

/// Rejects an upload whose decoded size is over the limit before decoding any of it.
fn check_size(files: &[ContextFile]) -> ApiResult<()> {
    let decoded: usize = files.iter().filter(|f| f.type_flag != TYPE_DIRECTORY).map(|f| f.content.len() / 4 * 3).sum();
    if decoded > MAX_MODEL_DEF_BYTES {
        return Err(too_large(format!(
            "model definition is {:.1} MiB, over the limit of {} MiB; leave large files out with a .detignore file",
            decoded as f64 / (1024.0 * 1024.0),
            MAX_MODEL_DEF_BYTES / (1024 * 1024)
        )));
    }
    Ok(())
}

/// A 413 with the `ResourceExhausted` reason, for uploads over a size limit.
pub fn too_large(message: String) -> ApiError {
    ApiError::new(ErrorCode::ResourceExhausted, message).with_status(axum::http::StatusCode::PAYLOAD_TOO_LARGE)
}

/// The entry's path without a leading `./` or trailing `/`, if it stays inside the context
/// directory: relative, no `..`, no empty or NUL-containing parts.
fn checked_path(index: usize, raw: &str) -> ApiResult<String> {
    let trimmed = raw.strip_prefix("./").unwrap_or(raw).trim_end_matches('/');
    let bad = |why: &str| ApiError::invalid(format!("modelDefinition[{index}] ({raw:?}): {why}"));
    if trimmed.is_empty() {
        return Err(bad("the path is empty"));
    }
    if trimmed.starts_with('/') || trimmed.contains('\\') {
        return Err(bad("paths must be relative, with '/' separators"));
    }
    if trimmed.contains('\0') {
        return Err(bad("paths must not contain NUL characters"));
    }
    for part in trimmed.split('/') {
        match part {
            ".." => return Err(bad("paths must stay inside the context directory (no '..')")),
            "" | "." => return Err(bad("paths must not contain empty or '.' parts")),
            _ => {}
        }
    }
    Ok(trimmed.to_owned())
}

#[cfg(test)]
pub(crate) mod tests {
    use std::io::Read;

    use flate2::read::GzDecoder;

    use super::*;

    pub(crate) fn file(path: &str, content: &[u8]) -> ContextFile {
        ContextFile {
            path: path.to_owned(),
            type_flag: TYPE_REGULAR,
            content: BASE64.encode(content),
            mtime: 1_710_000_000,
            mode: 0o100644,
            uid: 0,
            gid: 0,
        }
    }

    pub(crate) fn dir(path: &str) -> ContextFile {
        ContextFile {
            path: path.to_owned(),
            type_flag: TYPE_DIRECTORY,
            content: String::new(),
            mtime: 1_710_000_000,
            mode: 0o40755,
            uid: 0,
            gid: 0,
        }
    }

    #[test]
    fn archives_files_and_directories_with_their_metadata() {
        let archive = build_archive(&[file("train.py", b"print(1)\n"), dir("pkg"), file("pkg/m.py", b"x = 1\n")]).unwrap();
        let mut tar = tar::Archive::new(GzDecoder::new(archive.as_slice()));
        let mut seen = Vec::new();
        for entry in tar.entries().unwrap() {
            let mut entry = entry.unwrap();
            let path = entry.path().unwrap().to_string_lossy().into_owned();
            let (mode, mtime, kind) = (entry.header().mode().unwrap(), entry.header().mtime().unwrap(), entry.header().entry_type());
            let mut body = String::new();
            entry.read_to_string(&mut body).unwrap();
            seen.push((path, mode, mtime, kind.is_dir(), body));
        }
        assert_eq!(
            seen,
            [
                ("train.py".into(), 0o644, 1_710_000_000, false, "print(1)\n".into()),
                ("pkg/".into(), 0o755, 1_710_000_000, true, String::new()),
                ("pkg/m.py".into(), 0o644, 1_710_000_000, false, "x = 1\n".into()),
            ]
        );
    }

    #[test]
    fn escaping_or_absolute_paths_are_refused_naming_the_entry() {
        for bad in ["../x", "a/../../x", "/etc/passwd", "", "a//b", "a\\b"] {
            let err = build_archive(&[file("ok.py", b""), file(bad, b"x")]).unwrap_err();
            assert_eq!(err.status, 400, "{bad}");
            assert!(err.message.starts_with("modelDefinition[1]"), "{}", err.message);
        }
        assert!(build_archive(&[file("./ok.py", b"")]).is_ok());
    }

    #[test]
    fn only_files_and_directories_are_accepted() {
        let mut link = file("link", b"");
        link.type_flag = i32::from(b'2');
        let err = build_archive(&[link]).unwrap_err();
        assert!(err.message.contains("type 50 is not supported"), "{}", err.message);
    }

    #[test]
    fn bad_base64_is_refused() {
        let mut f = file("a.py", b"");
        f.content = "not base64!".into();
        let err = build_archive(&[f]).unwrap_err();
        assert!(err.message.contains("base64"), "{}", err.message);
    }

    #[test]
    fn oversized_uploads_are_refused_before_decoding() {
        let mut f = file("big.bin", b"");
        f.content = "A".repeat(MAX_MODEL_DEF_BYTES / 3 * 4 + 8);
        let err = build_archive(&[f]).unwrap_err();
        assert_eq!(err.status, 413);
        assert!(err.message.contains("95 MiB"), "{}", err.message);
    }
}
