//! The model definition's files read out of its stored tar.gz (pure): the nested tree the web UI
//! and upstream's `file_tree` show, and one file's bytes by path. Directories a tar leaves
//! implicit (`pkg/m.py` without `pkg/`) are added.

use std::collections::BTreeMap;
use std::io::Read;

use chrono::{DateTime, SecondsFormat};
use flate2::read::GzDecoder;
use resolute_api::model_def_files::FileNode;

use crate::error::{ApiError, ApiResult};

/// One archive entry: its path, whether it is a directory, size, mtime (seconds).
struct Entry {
    path: String,
    is_dir: bool,
    size: u64,
    mtime: i64,
    content_type: String,
}

fn corrupt(e: impl std::fmt::Display) -> ApiError {
    tracing::error!(error = %e, "a stored model definition is not a readable tar.gz");
    ApiError::internal()
}

/// `path` without `./`, leading or trailing slashes.
fn normalise(path: &str) -> String {
    path.trim_start_matches("./").trim_matches('/').to_owned()
}

/// Every entry of the archive, with the bytes of `want` if it is a regular file.
fn scan(archive: &[u8], want: Option<&str>) -> ApiResult<(Vec<Entry>, Option<Vec<u8>>)> {
    let mut tar = tar::Archive::new(GzDecoder::new(archive));
    let mut entries = Vec::new();
    let mut found = None;
    for entry in tar.entries().map_err(corrupt)? {
        let mut entry = entry.map_err(corrupt)?;
        let path = normalise(&entry.path().map_err(corrupt)?.to_string_lossy());
        if path.is_empty() {
            continue;
        }
        let is_dir = entry.header().entry_type().is_dir();
        let size = if is_dir { 0 } else { entry.header().size().map_err(corrupt)? };
        let mtime = entry.header().mtime().map_or(0, |m| i64::try_from(m).unwrap_or(0));
        let mut head = Vec::new();
        let content_type = if is_dir {
            String::new()
        } else if want == Some(path.as_str()) {
            let mut body = Vec::new();
            entry.read_to_end(&mut body).map_err(corrupt)?;
            let kind = content_type(&path, &body);
            found = Some(body);
            kind
        } else {
            (&mut entry).take(512).read_to_end(&mut head).map_err(corrupt)?;
            content_type(&path, &head)
        };
        entries.push(Entry { path, is_dir, size, mtime, content_type });
    }
    Ok((entries, found))
}

/// A MIME type from the extension, else text when the first bytes are UTF-8 without NULs.
fn content_type(path: &str, head: &[u8]) -> String {
    let ext = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    let known = match ext.as_str() {
        "py" => "text/x-python",
        "yaml" | "yml" => "application/yaml",
        "json" => "application/json",
        "md" => "text/markdown",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gz" | "tgz" => "application/gzip",
        "zip" => "application/zip",
        _ => "",
    };
    if !known.is_empty() {
        return known.to_owned();
    }
    // A multi-byte character cut at the sample's end is still text.
    let text = match std::str::from_utf8(head) {
        Ok(_) => true,
        Err(e) => e.error_len().is_none(),
    };
    if text && !head.contains(&0) { "text/plain; charset=utf-8" } else { "application/octet-stream" }.to_owned()
}

/// The archive as a tree: top-level nodes, each directory's `files` nested, directories first.
pub fn file_tree(archive: &[u8]) -> ApiResult<Vec<FileNode>> {
    let (entries, _) = scan(archive, None)?;
    let mut nodes: BTreeMap<String, FileNode> = BTreeMap::new();
    for e in &entries {
        // Parent directories the archive leaves implicit.
        let mut parent = e.path.as_str();
        while let Some((dir, _)) = parent.rsplit_once('/') {
            nodes.entry(dir.to_owned()).or_insert_with(|| node(dir, true, 0, e.mtime, String::new()));
            parent = dir;
        }
        nodes.insert(e.path.clone(), node(&e.path, e.is_dir, e.size, e.mtime, e.content_type.clone()));
    }
    // Deepest first, so each directory has its children before it moves into its parent.
    let mut paths: Vec<String> = nodes.keys().cloned().collect();
    paths.sort_by_key(|p| std::cmp::Reverse(p.matches('/').count()));
    let mut top = Vec::new();
    for path in paths {
        let Some(mut n) = nodes.remove(&path) else { continue };
        sort(&mut n.files);
        match path.rsplit_once('/').and_then(|(dir, _)| nodes.get_mut(dir)) {
            Some(parent) => parent.files.push(n),
            None => top.push(n),
        }
    }
    sort(&mut top);
    Ok(top)
}

fn sort(nodes: &mut [FileNode]) {
    nodes.sort_by(|a, b| b.is_dir.cmp(&a.is_dir).then_with(|| a.name.cmp(&b.name)));
}

fn node(path: &str, is_dir: bool, size: u64, mtime: i64, content_type: String) -> FileNode {
    FileNode {
        path: path.to_owned(),
        name: path.rsplit('/').next().unwrap_or(path).to_owned(),
        modified_time: DateTime::from_timestamp(mtime, 0).unwrap_or_default().to_rfc3339_opts(SecondsFormat::Secs, true),
        content_length: i32::try_from(size).unwrap_or(i32::MAX),
        is_dir,
        content_type,
        files: Vec::new(),
    }
}

/// The bytes of the regular file at `path` (as the tree names it). `experiment` is for errors.
pub fn read_file(archive: &[u8], path: &str, experiment: i32) -> ApiResult<Vec<u8>> {
    let wanted = normalise(path);
    if wanted.is_empty() {
        return Err(ApiError::invalid("path: give the path of a file of the model definition"));
    }
    let (entries, found) = scan(archive, Some(&wanted))?;
    if let Some(body) = found {
        return Ok(body);
    }
    let is_dir = entries.iter().any(|e| e.path == wanted && e.is_dir) || entries.iter().any(|e| e.path.starts_with(&format!("{wanted}/")));
    if is_dir {
        return Err(ApiError::invalid(format!(
            "path: {wanted:?} is a directory of experiment {experiment}'s model definition, not a file"
        )));
    }
    Err(ApiError::not_found(format!("path: experiment {experiment}'s model definition has no file {wanted:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::services::model_def::build_archive;
    use crate::services::model_def::tests::{dir, file};

    fn archive() -> Vec<u8> {
        build_archive(&[
            file("train.py", b"print(1)\n"),
            file("const.yaml", b"name: x\n"),
            dir("pkg"),
            file("pkg/model.py", b"x = 1\n"),
            // No entry for `data/` or `data/raw/`: both are added.
            file("data/raw/blob", &[0, 1, 2, 255]),
        ])
        .unwrap()
    }

    #[test]
    fn the_tree_nests_directories_first_with_sizes_times_and_types() {
        let tree = file_tree(&archive()).unwrap();
        let names: Vec<(&str, bool)> = tree.iter().map(|n| (n.path.as_str(), n.is_dir)).collect();
        assert_eq!(names, [("data", true), ("pkg", true), ("const.yaml", false), ("train.py", false)]);
        let raw = &tree[0].files[0];
        assert_eq!((raw.path.as_str(), raw.name.as_str(), raw.is_dir), ("data/raw", "raw", true));
        let blob = &raw.files[0];
        assert_eq!((blob.path.as_str(), blob.content_length, blob.content_type.as_str()), ("data/raw/blob", 4, "application/octet-stream"));
        let model = &tree[1].files[0];
        assert_eq!((model.name.as_str(), model.content_length, model.content_type.as_str()), ("model.py", 6, "text/x-python"));
        assert_eq!(tree[3].modified_time, "2024-03-09T16:00:00Z");
        assert!(tree[3].files.is_empty());
    }

    #[test]
    fn a_file_is_read_by_its_path_and_bad_paths_name_the_cause() {
        let a = archive();
        assert_eq!(read_file(&a, "pkg/model.py", 7).unwrap(), b"x = 1\n");
        assert_eq!(read_file(&a, "/train.py", 7).unwrap(), b"print(1)\n");
        let e = read_file(&a, "pkg", 7).unwrap_err();
        assert!(e.message.contains("is a directory"), "{}", e.message);
        let e = read_file(&a, "data", 7).unwrap_err();
        assert!(e.message.contains("is a directory"), "{}", e.message);
        let e = read_file(&a, "nope.py", 7).unwrap_err();
        assert!(e.message.contains("has no file \"nope.py\""), "{}", e.message);
        let e = read_file(&a, "", 7).unwrap_err();
        assert!(e.message.starts_with("path:"), "{}", e.message);
    }

    #[test]
    fn text_without_a_known_extension_is_plain_text() {
        assert_eq!(content_type("README", "héllo".as_bytes()), "text/plain; charset=utf-8");
        assert_eq!(content_type("bin", &[0xff, 0x00]), "application/octet-stream");
    }
}
