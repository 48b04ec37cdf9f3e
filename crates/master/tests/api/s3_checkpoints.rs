//! Checkpoints in S3 through the master, against a real S3-compatible server (`moto_server` from
//! the repository's `.venv`, pinned in `tests/compat/requirements.txt`): the upstream harness's
//! `S3StorageManager` uploads, the master downloads (tar and tar.gz), garbage-collects and deletes.

use std::collections::BTreeMap;
use std::io::Read;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use flate2::read::GzDecoder;
use resolute_master::services::checkpoint_gc::collect_experiment_checkpoints;
use serde_json::json;

use crate::checkpoint_files::{download, unpack, yaml};
use crate::experiments::create;
use crate::harness::TestMaster;
use crate::seed;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A moto server on a free loopback port, killed when dropped.
pub(crate) struct Moto {
    child: Child,
    pub(crate) endpoint: String,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn start_moto() -> Moto {
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

pub(crate) fn python(script: &str, args: &[&str]) -> String {
    let out = Command::new(repo().join(".venv/bin/python")).arg("-c").arg(script).args(args).output().expect("run .venv/bin/python");
    assert!(out.status.success(), "python failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Uploads a checkpoint as the harness does: metadata.json, model/w.bin, model/ marker.
pub(crate) const UPLOAD: &str = r#"
import os, sys, tempfile, boto3
from determined.common.storage import S3StorageManager
endpoint, bucket, prefix = sys.argv[1:4]
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="AK", aws_secret_access_key="SK", region_name="us-east-1")
try:
    s3.create_bucket(Bucket=bucket)
except s3.exceptions.BucketAlreadyOwnedByYou:
    pass
for uuid in sys.argv[4:]:
    src = tempfile.mkdtemp()
    os.makedirs(os.path.join(src, "model"))
    open(os.path.join(src, "metadata.json"), "w").write('{"uuid": "%s"}' % uuid)
    open(os.path.join(src, "model", "w.bin"), "wb").write(b"\x07" * 300000)
    S3StorageManager(bucket=bucket, access_key="AK", secret_key="SK", endpoint_url=endpoint, prefix=prefix).upload(src, uuid)
"#;

/// The bucket's keys holding data (directory markers left out).
pub(crate) const KEYS: &str = r#"
import sys, boto3
endpoint, bucket = sys.argv[1:3]
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="AK", aws_secret_access_key="SK", region_name="us-east-1")
for o in s3.list_objects_v2(Bucket=bucket).get("Contents", []):
    if o["Size"] > 0:
        print(o["Key"])
"#;

pub async fn s3_checkpoints_download_gc_and_delete_through_the_master(m: &TestMaster) {
    let moto = start_moto();
    let admin = m.login("admin", "").await;
    let storage = format!(
        "{{type: s3, bucket: ckpts, prefix: exp/, endpoint_url: \"{}\", access_key: AK, secret_key: SK, save_trial_best: 1, save_trial_latest: 1}}",
        moto.endpoint
    );
    let exp = create(m, &admin, &yaml("s3", &storage), false).await;
    let trial = seed::trial(m, exp, 1).await;
    for (uuid, steps, metric) in [("s-100", 100, Some(0.5)), ("s-200", 200, Some(0.9)), ("s-300", 300, Some(0.7))] {
        seed::checkpoint(m, &trial, uuid, steps, metric, "STATE_COMPLETED").await;
    }
    python(UPLOAD, &[&moto.endpoint, "ckpts", "exp", "s-100", "s-200", "s-300"]);

    let expected =
        BTreeMap::from([("metadata.json".to_owned(), b"{\"uuid\": \"s-200\"}".to_vec()), ("model/w.bin".to_owned(), vec![7u8; 300_000])]);
    let tar = download(m, &admin, "s-200", None).await;
    assert_eq!(tar.status(), 200);
    assert_eq!(unpack(&tar.bytes().await.unwrap()).0, expected);
    let gz = download(m, &admin, "s-200", Some("application/gzip")).await;
    assert_eq!(gz.status(), 200);
    let mut raw = Vec::new();
    GzDecoder::new(&gz.bytes().await.unwrap()[..]).read_to_end(&mut raw).unwrap();
    assert_eq!(unpack(&raw).0, expected);

    // GC: the best (s-200, accuracy is larger-is-better) and the latest (s-300) stay.
    let config = m.store.experiment_by_id(i32::try_from(exp).unwrap()).await.unwrap().config;
    let report = collect_experiment_checkpoints(m.store.as_ref(), i32::try_from(exp).unwrap(), &config, &[]).await.unwrap();
    assert_eq!(report.deleted, ["s-100"]);
    assert!(report.already_missing.is_empty());
    assert_eq!(m.store.checkpoint_by_uuid("s-100").await.unwrap().state, "STATE_DELETED");
    let keys = python(KEYS, &[&moto.endpoint, "ckpts"]);
    assert!(!keys.contains("exp/s-100/"), "{keys}");
    assert!(keys.contains("exp/s-200/model/w.bin") && keys.contains("exp/s-300/metadata.json"), "{keys}");
    assert_eq!(download(m, &admin, "s-100", None).await.status(), 404);

    let body = json!({"checkpointUuids": ["s-300"]});
    let ok = m.send(m.http.delete(format!("{}/api/v1/checkpoints", m.base)).bearer_auth(&admin).json(&body)).await;
    assert_eq!(ok.status, 200, "{}", ok.text);
    assert!(!python(KEYS, &[&moto.endpoint, "ckpts"]).contains("exp/s-300/"));
    assert_eq!(m.store.checkpoint_by_uuid("s-300").await.unwrap().state, "STATE_DELETED");

    // Files missing from the bucket: 404 naming where they were looked for.
    seed::checkpoint(m, &trial, "s-none", 400, None, "STATE_COMPLETED").await;
    let r = download(m, &admin, "s-none", None).await;
    assert_eq!(r.status(), 404);
    assert!(r.text().await.unwrap().contains("s3://ckpts/exp/s-none"));
}
