//! The token cache (`auth.json`), shared with the upstream Python CLI.
//!
//! Same path, same v2 layout, same lock file, same write-temp-then-rename dance as upstream's
//! `authentication.TokenStore`, so `det` binaries from either implementation can be used
//! interchangeably against one cache. Older v0/v1 files are migrated on load like upstream does.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use thiserror::Error;

use crate::url::{canonicalize_master_url, precanonicalize_v1_url};

#[derive(Debug, Error)]
pub enum StoreError {
    #[error("cannot find a home directory for the token cache; set DET_DEBUG_CONFIG_PATH")]
    NoConfigDir,
    #[error("cannot access the token cache {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("Attempted to read a corrupted token cache. The store has been deleted; please try again.")]
    Corrupt,
    #[error("no cached session for user '{0}'; log in with 'det user login {0}'")]
    NoToken(String),
}

/// One master's entry: `{"active_user": "...", "tokens": {"user": "token"}}`.
/// `deny_unknown_fields` doubles as upstream's `validate_one_master_entry`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MasterEntry {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_user: Option<String>,
    #[serde(default)]
    pub tokens: BTreeMap<String, String>,
}

/// The v2 file. Fields are declared in sorted order because upstream writes with `sort_keys`.
#[derive(Serialize)]
struct StoreFileV2<'a> {
    masters: &'a BTreeMap<String, MasterEntry>,
    version: u32,
}

/// Where upstream keeps `auth.json`: `$DET_DEBUG_CONFIG_PATH`, else the platform config dir.
pub fn default_path() -> Result<PathBuf, StoreError> {
    if let Some(dir) = std::env::var_os("DET_DEBUG_CONFIG_PATH").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir).join("auth.json"));
    }
    let base = if cfg!(target_os = "macos") {
        dirs::config_dir()
    } else if let Some(xdg) = std::env::var_os("XDG_CONFIG_HOME").filter(|d| !d.is_empty()) {
        Some(PathBuf::from(xdg))
    } else {
        dirs::home_dir().map(|h| h.join(".config"))
    };
    Ok(base.ok_or(StoreError::NoConfigDir)?.join("determined").join("auth.json"))
}

/// A view of one master's entry, re-read under the lock before every modification.
#[derive(Debug)]
pub struct TokenStore {
    master: String,
    path: PathBuf,
    entry: MasterEntry,
}

impl TokenStore {
    /// Opens the cache at the default location for `master` (a canonical URL).
    pub fn open(master: &str) -> Result<Self, StoreError> {
        Self::open_at(master, default_path()?)
    }

    pub fn open_at(master: &str, path: PathBuf) -> Result<Self, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(|source| io_err(dir, source))?;
        }
        let mut store = TokenStore { master: master.to_owned(), path, entry: MasterEntry::default() };
        let _lock = store.lock()?;
        let masters = store.load()?;
        store.entry = masters.get(&store.master).cloned().unwrap_or_default();
        Ok(store)
    }

    pub fn active_user(&self) -> Option<&str> {
        self.entry.active_user.as_deref()
    }

    pub fn token(&self, user: &str) -> Option<&str> {
        self.entry.tokens.get(user).map(String::as_str)
    }

    /// Every user with a cached token for this master.
    pub fn users(&self) -> Vec<String> {
        self.entry.tokens.keys().cloned().collect()
    }

    pub fn set_token(&mut self, user: &str, token: &str) -> Result<(), StoreError> {
        self.modify(|e| {
            e.tokens.insert(user.to_owned(), token.to_owned());
            Ok(())
        })
    }

    pub fn drop_user(&mut self, user: &str) -> Result<(), StoreError> {
        self.modify(|e| {
            e.tokens.remove(user);
            Ok(())
        })
    }

    /// Makes `user` the default for later commands; like upstream, only users with a token.
    pub fn set_active(&mut self, user: &str) -> Result<(), StoreError> {
        self.modify(|e| {
            if !e.tokens.contains_key(user) {
                return Err(StoreError::NoToken(user.to_owned()));
            }
            e.active_user = Some(user.to_owned());
            Ok(())
        })
    }

    pub fn clear_active(&mut self) -> Result<(), StoreError> {
        self.modify(|e| {
            e.active_user = None;
            Ok(())
        })
    }

    /// Read-modify-write under the lock, so concurrent `det` processes (ours or upstream's) never
    /// lose each other's updates.
    fn modify(&mut self, f: impl FnOnce(&mut MasterEntry) -> Result<(), StoreError>) -> Result<(), StoreError> {
        let _lock = self.lock()?;
        let mut masters = self.load()?;
        let entry = masters.entry(self.master.clone()).or_default();
        f(entry)?;
        self.entry = entry.clone();
        self.write(&masters)
    }

    /// Upstream uses `filelock.FileLock` on `auth.json.lock`, which is `flock(LOCK_EX)`; std's
    /// `File::lock` is the same call, so the two implementations exclude each other.
    fn lock(&self) -> Result<File, StoreError> {
        let lock_path = sibling(&self.path, ".lock");
        let file =
            OpenOptions::new().create(true).truncate(false).write(true).mode(0o600).open(&lock_path).map_err(|e| io_err(&lock_path, e))?;
        file.lock().map_err(|e| io_err(&lock_path, e))?;
        Ok(file) // dropping the handle releases the lock
    }

    fn load(&self) -> Result<BTreeMap<String, MasterEntry>, StoreError> {
        let text = match fs::read_to_string(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
            Err(e) => return Err(io_err(&self.path, e)),
        };
        parse_store(&text, &self.master).inspect_err(|e| {
            if matches!(e, StoreError::Corrupt) {
                // Upstream deletes a corrupt cache so the next command starts clean.
                let _ = fs::remove_file(&self.path);
            }
        })
    }

    fn write(&self, masters: &BTreeMap<String, MasterEntry>) -> Result<(), StoreError> {
        let temp = sibling(&self.path, ".temp");
        let body = render_store(masters);
        let mut f = OpenOptions::new().create(true).truncate(true).write(true).mode(0o600).open(&temp).map_err(|e| io_err(&temp, e))?;
        f.write_all(body.as_bytes()).map_err(|e| io_err(&temp, e))?;
        drop(f);
        fs::rename(&temp, &self.path).map_err(|e| io_err(&self.path, e))
    }
}

/// Parses any version of the file into v2 form (canonical master URL → entry).
fn parse_store(text: &str, master: &str) -> Result<BTreeMap<String, MasterEntry>, StoreError> {
    let store: Value = serde_json::from_str(text).map_err(|_| StoreError::Corrupt)?;
    let Value::Object(mut obj) = store else {
        return Err(StoreError::Corrupt);
    };
    let version = match obj.get("version") {
        None => 0,
        Some(v) => v.as_u64().ok_or(StoreError::Corrupt)?,
    };
    match version {
        // v0: a single, unkeyed entry for whatever master was in use.
        0 => {
            let entry: MasterEntry = from_value(Value::Object(obj))?;
            Ok(BTreeMap::from([(master.to_owned(), entry)]))
        }
        1 => {
            let masters = from_value(obj.remove("masters").unwrap_or_else(empty_object))?;
            Ok(shim_v1(masters))
        }
        2 => {
            let masters: BTreeMap<String, MasterEntry> = from_value(obj.remove("masters").unwrap_or_else(empty_object))?;
            let all_canonical = masters.keys().all(|k| canonicalize_master_url(k).is_ok_and(|c| c == *k));
            if all_canonical { Ok(masters) } else { Err(StoreError::Corrupt) }
        }
        _ => Err(StoreError::Corrupt),
    }
}

fn from_value<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, StoreError> {
    serde_json::from_value(v).map_err(|_| StoreError::Corrupt)
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// v1 → v2: re-key by canonical URL, merging entries that now collide; unparseable keys are
/// dropped rather than failing the whole cache, as upstream does.
fn shim_v1(v1: BTreeMap<String, MasterEntry>) -> BTreeMap<String, MasterEntry> {
    let mut v2: BTreeMap<String, MasterEntry> = BTreeMap::new();
    for (url, entry) in v1 {
        let Ok(canonical) = precanonicalize_v1_url(&url).and_then(|u| canonicalize_master_url(&u)) else {
            continue;
        };
        let merged = v2.entry(canonical).or_default();
        merged.tokens.extend(entry.tokens);
        if merged.active_user.is_none() {
            merged.active_user = entry.active_user;
        }
    }
    v2
}

/// `json.dump(store, f, indent=4, sort_keys=True)`.
fn render_store(masters: &BTreeMap<String, MasterEntry>) -> String {
    let file = StoreFileV2 { masters, version: 2 };
    let mut out = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
    // Serialising maps of strings into memory cannot fail.
    let _ = file.serialize(&mut ser);
    String::from_utf8(out).unwrap_or_default()
}

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

fn io_err(path: &Path, source: io::Error) -> StoreError {
    StoreError::Io { path: path.to_owned(), source }
}

#[cfg(test)]
mod tests;
