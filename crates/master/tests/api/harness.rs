use std::sync::Arc;

use resolute_master::{Master, MasterConfig};
use resolute_store::Store;
use serde_json::{Value, json};
use tokio::sync::oneshot;

/// Expands a test case `module::case(&TestMaster)` into `case::sqlite` and `case::postgres`.
macro_rules! api_test {
    ($module:ident :: $case:ident) => {
        mod $case {
            #[tokio::test]
            async fn sqlite() {
                let master = $crate::harness::TestMaster::sqlite().await;
                $crate::$module::$case(&master).await;
            }
            #[tokio::test]
            async fn postgres() {
                if let Some(master) = $crate::harness::TestMaster::postgres().await {
                    $crate::$module::$case(&master).await;
                }
            }
        }
    };
    // The case takes the master by value (to restart it).
    (owned $module:ident :: $case:ident) => {
        mod $case {
            #[tokio::test]
            async fn sqlite() {
                $crate::$module::$case($crate::harness::TestMaster::sqlite().await).await;
            }
            #[tokio::test]
            async fn postgres() {
                if let Some(master) = $crate::harness::TestMaster::postgres().await {
                    $crate::$module::$case(master).await;
                }
            }
        }
    };
}
pub(crate) use api_test;

pub struct TestMaster {
    pub base: String,
    pub http: reqwest::Client,
    /// The master's own store, to seed what no endpoint creates yet (trials, checkpoints).
    pub store: Arc<dyn Store>,
    /// The master's cluster handle, to raise preemption signals as the loop would.
    pub cluster: resolute_master::cluster::ClusterHandle,
    /// The master's task-service registry, to register proxy targets as the loop would.
    pub proxies: resolute_master::services::ProxyRegistry,
    config: MasterConfig,
    shutdown: oneshot::Sender<()>,
    served: tokio::task::JoinHandle<()>,
    dir: tempfile::TempDir,
}

pub struct Reply {
    pub status: u16,
    pub body: Value,
    pub text: String,
}

impl TestMaster {
    pub async fn sqlite() -> TestMaster {
        Self::start(MasterConfig::default()).await
    }

    pub async fn postgres() -> Option<TestMaster> {
        let (admin, database) = crate::pg_databases::create_test_database("resolute_api_").await?;
        let mut config = MasterConfig::default();
        config.db.host = admin.get_host().to_owned();
        config.db.port = admin.get_port();
        config.db.user = admin.get_username().to_owned();
        config.db.name = database;
        Some(Self::start(config).await)
    }

    pub async fn start(config: MasterConfig) -> TestMaster {
        Self::start_in(config, tempfile::tempdir().unwrap()).await
    }

    /// Stops the master (as a shutdown would) and starts a new one on the same database and
    /// data directory.
    pub async fn restart(self) -> TestMaster {
        let TestMaster { config, shutdown, served, dir, .. } = self;
        let _ = shutdown.send(());
        tokio::time::timeout(std::time::Duration::from_secs(10), served).await.expect("the master stops within 10 s").unwrap();
        Self::start_in(config, dir).await
    }

    /// [`TestMaster::restart`] with a changed configuration (same database and data directory).
    pub async fn restart_with(mut self, change: impl FnOnce(&mut MasterConfig)) -> TestMaster {
        change(&mut self.config);
        self.restart().await
    }

    async fn start_in(mut config: MasterConfig, dir: tempfile::TempDir) -> TestMaster {
        let original = config.clone();
        config.port = 0;
        if config.data_dir.is_none() {
            config.data_dir = Some(dir.path().to_owned());
        }
        let master = Master::start(config).await.expect("master starts");
        let base = format!("http://127.0.0.1:{}", master.local_addr().port());
        let store = master.store();
        let cluster = master.cluster();
        let proxies = master.proxies();
        let (tx, rx) = oneshot::channel::<()>();
        let served = tokio::spawn(async move {
            master
                .serve(async move {
                    let _ = rx.await;
                })
                .await
                .expect("master serves");
        });
        TestMaster { base, http: reqwest::Client::new(), store, cluster, proxies, config: original, shutdown: tx, served, dir }
    }

    pub async fn send(&self, req: reqwest::RequestBuilder) -> Reply {
        let resp = req.send().await.expect("request reaches the master");
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Reply { status, body, text }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    pub async fn get(&self, path: &str, token: Option<&str>) -> Reply {
        self.send(auth(self.http.get(self.url(path)), token)).await
    }

    pub async fn post(&self, path: &str, token: Option<&str>, body: Value) -> Reply {
        self.send(auth(self.http.post(self.url(path)), token).json(&body)).await
    }

    pub async fn post_raw(&self, path: &str, token: Option<&str>, body: &str) -> Reply {
        self.send(auth(self.http.post(self.url(path)), token).body(body.to_owned())).await
    }

    pub async fn put(&self, path: &str, token: Option<&str>) -> Reply {
        self.send(auth(self.http.put(self.url(path)), token)).await
    }

    pub async fn delete(&self, path: &str, token: Option<&str>) -> Reply {
        self.send(auth(self.http.delete(self.url(path)), token)).await
    }

    pub async fn patch(&self, path: &str, token: Option<&str>, body: Value) -> Reply {
        self.send(auth(self.http.patch(self.url(path)), token).json(&body)).await
    }

    /// Logs in with a plain password and returns the token.
    pub async fn login(&self, username: &str, password: &str) -> String {
        let r = self.post("/api/v1/auth/login", None, json!({"username": username, "password": password})).await;
        assert_eq!(r.status, 200, "login {username}: {}", r.text);
        r.body["token"].as_str().expect("token").to_owned()
    }

    /// Creates a user as admin, returning its id.
    pub async fn create_user(&self, admin_token: &str, username: &str, password: &str) -> i64 {
        let r = self
            .post(
                "/api/v1/users",
                Some(admin_token),
                json!({"user": {"username": username, "admin": false, "active": true}, "password": password}),
            )
            .await;
        assert_eq!(r.status, 200, "create {username}: {}", r.text);
        r.body["user"]["id"].as_i64().expect("id")
    }
}

fn auth(req: reqwest::RequestBuilder, token: Option<&str>) -> reqwest::RequestBuilder {
    match token {
        Some(t) => req.bearer_auth(t),
        None => req,
    }
}

/// Asserts the upstream error envelope with the given HTTP status and gRPC reason.
pub fn assert_error(reply: &Reply, status: u16, reason: &str) {
    assert_eq!(reply.status, status, "{}", reply.text);
    assert_eq!(reply.body["error"]["reason"], reason, "{}", reply.text);
    assert!(reply.body["error"]["code"].is_i64(), "{}", reply.text);
    assert!(!reply.body["error"]["error"].as_str().unwrap_or("").is_empty(), "{}", reply.text);
}
