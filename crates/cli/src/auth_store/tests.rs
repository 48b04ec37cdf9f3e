use super::*;

const LOCAL: &str = "http://localhost:8080";

/// Byte-for-byte what upstream's `json.dump(store, f, indent=4, sort_keys=True)` writes.
const UPSTREAM_V2: &str = r#"{
    "masters": {
        "http://localhost:8080": {
            "active_user": "admin",
            "tokens": {
                "admin": "tokA",
                "determined": "tokD"
            }
        },
        "https://det.example.com:443": {
            "tokens": {}
        }
    },
    "version": 2
}"#;

fn store_in(dir: &tempfile::TempDir, text: Option<&str>) -> PathBuf {
    let path = dir.path().join("auth.json");
    if let Some(text) = text {
        fs::write(&path, text).expect("write fixture");
    }
    path
}

#[test]
fn reads_an_upstream_written_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = store_in(&dir, Some(UPSTREAM_V2));
    let store = TokenStore::open_at(LOCAL, path).expect("open");
    assert_eq!(store.active_user(), Some("admin"));
    assert_eq!(store.token("determined"), Some("tokD"));
    assert_eq!(store.users(), vec!["admin".to_owned(), "determined".to_owned()]);

    let other = TokenStore::open_at("https://det.example.com:443", dir.path().join("auth.json"));
    assert_eq!(other.expect("open").active_user(), None);
}

#[test]
fn writes_exactly_what_upstream_writes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = store_in(&dir, None);
    let mut local = TokenStore::open_at(LOCAL, path.clone()).expect("open");
    local.set_token("determined", "tokD").expect("set");
    local.set_token("admin", "tokA").expect("set");
    local.set_active("admin").expect("activate");
    let mut remote = TokenStore::open_at("https://det.example.com:443", path.clone()).expect("open");
    remote.drop_user("nobody").expect("drop");
    assert_eq!(fs::read_to_string(&path).expect("read"), UPSTREAM_V2);
    assert!(!sibling(&path, ".temp").exists());
}

#[test]
fn round_trips_and_sees_other_writers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = store_in(&dir, Some(UPSTREAM_V2));
    let mut a = TokenStore::open_at(LOCAL, path.clone()).expect("open");
    let mut b = TokenStore::open_at(LOCAL, path.clone()).expect("open");
    a.set_token("alice", "tok1").expect("set");
    // `b` re-reads under the lock, so it keeps alice's token while dropping admin.
    b.drop_user("admin").expect("drop");
    b.clear_active().expect("clear");
    let fresh = TokenStore::open_at(LOCAL, path).expect("open");
    assert_eq!(fresh.token("alice"), Some("tok1"));
    assert_eq!(fresh.token("admin"), None);
    assert_eq!(fresh.active_user(), None);
}

#[test]
fn set_active_requires_a_token() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut store = TokenStore::open_at(LOCAL, store_in(&dir, None)).expect("open");
    assert!(matches!(store.set_active("ghost"), Err(StoreError::NoToken(_))));
}

#[test]
fn migrates_v0_and_v1_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let v0 = r#"{"active_user": "u", "tokens": {"u": "t"}}"#;
    let store = TokenStore::open_at(LOCAL, store_in(&dir, Some(v0))).expect("open v0");
    assert_eq!((store.active_user(), store.token("u")), (Some("u"), Some("t")));

    let v1 = r#"{"version": 1, "masters": {
        "localhost:8080": {"active_user": "a", "tokens": {"a": "1"}},
        "http://localhost:8080/": {"tokens": {"b": "2"}},
        "http://x@localhost:8080?q": {"tokens": {"c": "3"}}
    }}"#;
    let store = TokenStore::open_at(LOCAL, store_in(&dir, Some(v1))).expect("open v1");
    assert_eq!(store.active_user(), Some("a"));
    assert_eq!(store.users(), vec!["a".to_owned(), "b".to_owned(), "c".to_owned()]);
}

#[test]
fn corrupt_files_are_deleted() {
    for bad in [
        "not json",
        "[]",
        r#"{"version": 2, "masters": {"localhost:8080": {}}}"#,
        r#"{"version": 2, "masters": {"http://localhost:8080": {"extra": 1}}}"#,
        r#"{"version": 2, "masters": {"http://localhost:8080": {"tokens": {"a": 1}}}}"#,
        r#"{"version": 3}"#,
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = store_in(&dir, Some(bad));
        let err = TokenStore::open_at(LOCAL, path.clone()).expect_err(bad);
        assert!(matches!(err, StoreError::Corrupt), "{bad}: {err}");
        assert!(!path.exists(), "{bad} should have been deleted");
    }
}

#[test]
fn creates_a_private_directory() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("nested").join("auth.json");
    TokenStore::open_at(LOCAL, path.clone()).expect("open");
    let mode = fs::metadata(dir.path().join("nested")).expect("stat").permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
}
