//! Builds the `modelDefinition` file list exactly as the upstream CLI does
//! (`determined/common/context.py` + `detignore.os_walk_to_v1Files` + `v1file_utils`): a top-down
//! walk of the context directory, each directory's subdirectories listed before its files, paths
//! relative to the root with `/`, content base64, `mtime` a string of whole seconds, `mode` the
//! full `st_mode`, uid and gid 0. (`.detignore` itself is skipped; patterns are not needed here.)

use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use flate2::read::GzDecoder;
use serde_json::{Value, json};

/// A small Iris-like context directory: two files at the top, a data directory with a file and an
/// empty subdirectory.
pub fn write_sample_context(root: &Path) {
    std::fs::write(root.join("model_def.py"), "class IrisTrial:\n    pass\n").unwrap();
    std::fs::write(root.join("startup-hook.sh"), "pip install pandas\n").unwrap();
    std::fs::write(root.join(".detignore"), "*.pyc\n").unwrap();
    std::fs::create_dir_all(root.join("data/empty")).unwrap();
    std::fs::write(root.join("data/iris.csv"), "5.1,3.5,1.4,0.2,setosa\n").unwrap();
}

pub fn read_v1_context(root: &Path) -> Vec<Value> {
    let mut files = Vec::new();
    walk(root, root, &mut files);
    files
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<Value>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    let (dirs, files): (Vec<_>, Vec<_>) = entries.into_iter().partition(|p| p.is_dir());
    for d in &dirs {
        out.push(v1_file(root, d, 53, String::new()));
    }
    for f in files {
        if f.file_name().is_some_and(|n| n == ".detignore") {
            continue;
        }
        let content = BASE64.encode(std::fs::read(&f).unwrap());
        out.push(v1_file(root, &f, 48, content));
    }
    for d in dirs {
        walk(root, &d, out);
    }
}

fn v1_file(root: &Path, path: &Path, file_type: u8, content: String) -> Value {
    let meta = std::fs::metadata(path).unwrap();
    json!({
        "path": path.strip_prefix(root).unwrap().to_string_lossy(),
        "type": file_type,
        "content": content,
        "mtime": meta.mtime().to_string(),
        "mode": meta.mode(),
        "uid": 0,
        "gid": 0,
    })
}

/// An entry of an unpacked tar.gz: path, is-directory, content, mode, mtime.
#[derive(Debug, PartialEq)]
pub struct TarEntry {
    pub path: String,
    pub is_dir: bool,
    pub content: Vec<u8>,
    pub mode: u32,
    pub mtime: u64,
}

pub fn untar(b64_tgz: &str) -> Vec<TarEntry> {
    let bytes = BASE64.decode(b64_tgz).unwrap();
    let mut archive = tar::Archive::new(GzDecoder::new(bytes.as_slice()));
    archive
        .entries()
        .unwrap()
        .map(|entry| {
            let mut entry = entry.unwrap();
            let header = entry.header().clone();
            let mut content = Vec::new();
            entry.read_to_end(&mut content).unwrap();
            TarEntry {
                path: entry.path().unwrap().to_string_lossy().trim_end_matches('/').to_owned(),
                is_dir: header.entry_type().is_dir(),
                content,
                mode: header.mode().unwrap(),
                mtime: header.mtime().unwrap(),
            }
        })
        .collect()
}
