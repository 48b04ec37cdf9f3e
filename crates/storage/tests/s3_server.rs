//! The cloud store against a real S3-compatible server: `moto_server` (moto, pinned in
//! `tests/compat/requirements.txt`) from the repository's `.venv` (or `RESOLUTE_MOTO_SERVER`),
//! with checkpoints uploaded by the upstream harness's own `S3StorageManager`.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures_util::TryStreamExt;
use resolute_storage::{CheckpointFiles, Deletion, StorageConfig};
use serde_json::json;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A moto server on a free loopback port, killed when dropped.
struct Moto {
    child: Child,
    endpoint: String,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_moto() -> Moto {
    let binary = std::env::var_os("RESOLUTE_MOTO_SERVER").map(PathBuf::from).unwrap_or_else(|| repo().join(".venv/bin/moto_server"));
    assert!(binary.exists(), "{} is missing: install tests/compat/requirements.txt (scripts/python-env.sh)", binary.display());
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = Command::new(&binary)
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
    let moto = Moto { child, endpoint: format!("http://127.0.0.1:{port}") };
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        assert!(Instant::now() < deadline, "moto_server did not listen on {addr} within 30 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    moto
}

/// Runs Python from the repository's venv (boto3 and the upstream harness).
fn python(script: &str, args: &[&str]) -> String {
    let out = Command::new(repo().join(".venv/bin/python")).arg("-c").arg(script).args(args).output().expect("run .venv/bin/python");
    assert!(out.status.success(), "python failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const UPLOAD: &str = r#"
import os, sys, tempfile, boto3
from determined.common.storage import S3StorageManager
endpoint, bucket, prefix, uuid = sys.argv[1:5]
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="AK", aws_secret_access_key="SK", region_name="us-east-1")
try:
    s3.create_bucket(Bucket=bucket)
except s3.exceptions.BucketAlreadyOwnedByYou:
    pass
src = tempfile.mkdtemp()
os.makedirs(os.path.join(src, "model", "sub"))
open(os.path.join(src, "metadata.json"), "w").write('{"steps": 3}')
open(os.path.join(src, "model", "weights.bin"), "wb").write(b"w" * 3000)
open(os.path.join(src, "model", "sub", "opt.pt"), "wb").write(b"o" * 10)
S3StorageManager(bucket=bucket, access_key="AK", secret_key="SK", endpoint_url=endpoint, prefix=prefix).upload(src, uuid)
"#;

const KEYS: &str = r#"
import sys, boto3
endpoint, bucket = sys.argv[1:3]
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="AK", aws_secret_access_key="SK", region_name="us-east-1")
for o in s3.list_objects_v2(Bucket=bucket).get("Contents", []):
    print(o["Key"])
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_checkpoints_are_listed_read_partly_removed_and_deleted() {
    let moto = start_moto();
    let (bucket, uuid, other) = ("ckpts", "5e1f-aa", "5e1f-bb");
    python(UPLOAD, &[&moto.endpoint, bucket, "/team/runs/", uuid]);
    python(UPLOAD, &[&moto.endpoint, bucket, "team/runs", other]);
    let keys = python(KEYS, &[&moto.endpoint, bucket]);
    assert!(keys.contains(&format!("team/runs/{uuid}/model/\n")), "the harness writes directory markers: {keys}");

    let config = json!({"type": "s3", "bucket": bucket, "prefix": "/team/runs/", "endpoint_url": moto.endpoint,
        "access_key": "AK", "secret_key": "SK"});
    let store = StorageConfig::from_json(&config).unwrap().open().unwrap();
    assert_eq!(store.describe(uuid).unwrap(), format!("s3://{bucket}/team/runs/{uuid}"));

    let listed = store.list_files(uuid).await.unwrap();
    assert_eq!(listed, vec![("metadata.json".to_owned(), 12), ("model/sub/opt.pt".to_owned(), 10), ("model/weights.bin".to_owned(), 3000)]);

    let Some(CheckpointFiles::Objects(objects)) = store.files(uuid).await.unwrap() else { panic!("no objects") };
    let weights = objects.files.iter().find(|f| f.relative == "model/weights.bin").unwrap();
    let bytes: Vec<Vec<u8>> = objects.read(weights).await.unwrap().try_collect().await.unwrap();
    assert_eq!(bytes.concat(), vec![b'w'; 3000]);

    store.remove_files(uuid, &["model/sub/opt.pt".to_owned()]).await.unwrap();
    // The emptied directory's marker (`model/sub/`) stays: `object_store` cannot name a key ending
    // in `/`, so it lists it as an empty `model/sub`.
    let left: Vec<(String, u64)> = store.list_files(uuid).await.unwrap().into_iter().filter(|(_, size)| *size > 0).collect();
    assert_eq!(left, [("metadata.json".to_owned(), 12), ("model/weights.bin".to_owned(), 3000)]);

    assert_eq!(store.delete(uuid).await.unwrap(), Deletion::Deleted);
    assert!(store.list_files(uuid).await.unwrap().iter().all(|(_, size)| *size == 0));
    assert!(store.files(uuid).await.unwrap().is_none());
    assert_eq!(store.delete(uuid).await.unwrap(), Deletion::AlreadyMissing, "deleting again is not an error");
    let keys = python(KEYS, &[&moto.endpoint, bucket]);
    let left: Vec<&str> = keys.lines().filter(|k| k.contains(&format!("/{uuid}/"))).collect();
    assert!(left.iter().all(|k| k.ends_with('/')), "every file of the checkpoint is gone, only directory markers may stay: {left:?}");
    assert_eq!(store.list_files(other).await.unwrap().len(), 3, "the other checkpoint is untouched");

    let wrong = json!({"type": "s3", "bucket": "no-such-bucket", "endpoint_url": moto.endpoint, "access_key": "AK", "secret_key": "SK"});
    let err = StorageConfig::from_json(&wrong).unwrap().open().unwrap().list_files(uuid).await.unwrap_err();
    assert!(err.to_string().contains(&format!("s3://no-such-bucket/{uuid}")), "{err}");
}
