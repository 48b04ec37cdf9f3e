//! `ANY /proxy/{task}/…`: HTTP, websocket and TCP-over-websocket relays to task services, and who
//! may open them. The services are real servers in the test; targets are registered as the
//! cluster loop will.

use std::collections::BTreeMap;

use axum::Router;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::IntoResponse;
use axum::routing::{any, get, post};
use futures_util::{SinkExt, StreamExt};
use resolute_master::services::{ProxyKind, ProxyTarget};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{self, Message as WsMessage};

use crate::harness::{TestMaster, assert_error};

const BIG_BYTES: usize = 10 * 1024 * 1024;

/// The byte at `i` of the large response: a pattern that catches reordered or dropped chunks.
fn pattern(i: usize) -> u8 {
    (i % 251) as u8
}

/// An HTTP service that answers as JupyterLab would under its `/proxy/<id>/` base URL.
async fn start_http_service() -> String {
    async fn echo(uri: Uri, headers: HeaderMap) -> impl IntoResponse {
        let seen: BTreeMap<String, String> =
            headers.iter().map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("?").to_owned())).collect();
        let status = if uri.query().is_some_and(|q| q.contains("status=418")) { StatusCode::IM_A_TEAPOT } else { StatusCode::OK };
        (status, [("x-service", "echo")], axum::Json(json!({"uri": uri.to_string(), "headers": seen})))
    }
    async fn upload(body: axum::body::Body) -> String {
        let (mut len, mut sum) = (0usize, 0u64);
        let mut chunks = body.into_data_stream();
        while let Some(chunk) = chunks.next().await {
            let chunk = chunk.unwrap();
            len += chunk.len();
            sum += chunk.iter().map(|&b| u64::from(b)).sum::<u64>();
        }
        format!("{len} {sum}")
    }
    async fn big() -> Vec<u8> {
        (0..BIG_BYTES).map(pattern).collect()
    }
    async fn ws_echo(upgrade: WebSocketUpgrade) -> axum::response::Response {
        upgrade.protocols(["v1.kernel.websocket.jupyter.org"]).on_upgrade(|mut socket: WebSocket| async move {
            while let Some(Ok(message)) = socket.recv().await {
                let reply = match message {
                    Message::Text(text) => Message::Text(format!("echo {}", text.as_str()).into()),
                    Message::Binary(bytes) => Message::Binary(bytes.iter().rev().copied().collect::<Vec<u8>>().into()),
                    Message::Close(_) => break,
                    _ => continue,
                };
                if socket.send(reply).await.is_err() {
                    break;
                }
            }
        })
    }
    let app = Router::new()
        .route("/proxy/{service}/echo", any(echo))
        .route("/proxy/{service}/", get(echo))
        .route("/proxy/{service}/upload", post(upload))
        .route("/proxy/{service}/big", get(big))
        .route("/proxy/{service}/ws", get(ws_echo));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    address
}

/// A TCP service that echoes every byte (standing in for a shell's sshd).
async fn start_tcp_echo() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let (mut rx, mut tx) = stream.split();
                let _ = tokio::io::copy(&mut rx, &mut tx).await;
            });
        }
    });
    address
}

fn target(address: &str, owner_id: i64, kind: ProxyKind, task_type: &str) -> ProxyTarget {
    ProxyTarget { address: address.to_owned(), owner_id: owner_id as i32, kind, task_type: task_type.into(), unauthenticated: false }
}

/// The owner's token and id (a non-admin user).
async fn owner(master: &TestMaster) -> (String, i64) {
    let admin = master.login("admin", "").await;
    let id = master.create_user(&admin, "owner", "Passw0rd!").await;
    (master.login("owner", "Passw0rd!").await, id)
}

fn ws_url(master: &TestMaster, path: &str) -> String {
    format!("{}{path}", master.base.replacen("http://", "ws://", 1))
}

pub async fn proxy_http_requests_pass_through_with_the_full_path(master: &TestMaster) {
    let service = start_http_service().await;
    let (token, owner_id) = owner(master).await;
    master.proxies.register("nb-1", target(&service, owner_id, ProxyKind::Http, "NOTEBOOK"));
    let registered_at = master.proxies.last_activity("nb-1").unwrap();

    // The full original path and query reach the service; our credentials do not, its own
    // cookies do.
    let reply = master
        .send(
            master
                .http
                .get(format!("{}/proxy/nb-1/echo?a=1&b=two%20words", master.base))
                .bearer_auth(&token)
                .header("cookie", "_xsrf=abc; auth=whatever")
                .header("x-custom", "kept"),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(reply.body["uri"], "/proxy/nb-1/echo?a=1&b=two%20words");
    let headers = &reply.body["headers"];
    assert_eq!(headers["x-custom"], "kept");
    assert_eq!(headers["cookie"], "_xsrf=abc");
    assert_eq!(headers["authorization"], Value::Null, "the master session must not reach the service");
    assert!(headers["host"].as_str().unwrap().starts_with("127.0.0.1:"), "{headers}");
    assert!(master.proxies.last_activity("nb-1").unwrap() >= registered_at);

    // The service's status and headers come back as they are.
    let resp = master.http.get(format!("{}/proxy/nb-1/echo?status=418", master.base)).bearer_auth(&token).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 418);
    assert_eq!(resp.headers()["x-service"], "echo");

    // The `auth` cookie authenticates in place of the header.
    let by_cookie =
        master.send(master.http.get(format!("{}/proxy/nb-1/echo", master.base)).header("cookie", format!("auth={token}"))).await;
    assert_eq!(by_cookie.status, 200, "{}", by_cookie.text);
    assert_eq!(by_cookie.body["headers"]["cookie"], Value::Null);

    // The service's own pages POST with the cookie from the master's origin (JupyterLab does);
    // another site's page may not, even to the service.
    let post_from = |origin: &str| {
        master
            .http
            .post(format!("{}/proxy/nb-1/upload", master.base))
            .header("cookie", format!("auth={token}"))
            .header("origin", origin)
            .body("x")
    };
    let same_origin = master.send(post_from(&master.base)).await;
    assert_eq!(same_origin.status, 200, "{}", same_origin.text);
    let forged = master.send(post_from("http://evil.example")).await;
    assert_eq!(forged.status, 403, "{}", forged.text);
    assert!(forged.text.contains("cross-site request refused"), "{}", forged.text);

    // The base URL without its slash redirects to it.
    let no_slash = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let resp = no_slash.get(format!("{}/proxy/nb-1?x=1", master.base)).bearer_auth(&token).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 308);
    assert_eq!(resp.headers()["location"], "/proxy/nb-1/?x=1");
    let root = master.get("/proxy/nb-1/", Some(&token)).await;
    assert_eq!(root.body["uri"], "/proxy/nb-1/", "{}", root.text);

    // A request body goes through whole.
    let upload: Vec<u8> = (0..12 * 1024 * 1024).map(|i| (i % 7) as u8).collect();
    let expected = format!("{} {}", upload.len(), upload.iter().map(|&b| u64::from(b)).sum::<u64>());
    let reply = master.send(master.http.post(format!("{}/proxy/nb-1/upload", master.base)).bearer_auth(&token).body(upload)).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(reply.text, expected);

    // A 10 MB response arrives intact.
    let resp = master.http.get(format!("{}/proxy/nb-1/big", master.base)).bearer_auth(&token).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let body = resp.bytes().await.unwrap();
    assert_eq!(body.len(), BIG_BYTES);
    assert!(body.iter().enumerate().all(|(i, &b)| b == pattern(i)), "the large body is corrupted");
}

pub async fn proxy_websockets_relay_frames_to_http_and_tcp_services(master: &TestMaster) {
    let (token, owner_id) = owner(master).await;
    let http_service = start_http_service().await;
    let tcp_service = start_tcp_echo().await;
    master.proxies.register("nb-1", target(&http_service, owner_id, ProxyKind::Http, "NOTEBOOK"));
    master.proxies.register("shell-1", target(&tcp_service, owner_id, ProxyKind::Tcp, "SHELL"));

    // A kernel websocket: text and binary frames both ways, the subprotocol negotiated with the
    // service.
    let mut request = ws_url(master, "/proxy/nb-1/ws?session_id=s1").into_client_request().unwrap();
    request.headers_mut().insert("authorization", format!("Bearer {token}").parse().unwrap());
    request.headers_mut().insert("sec-websocket-protocol", "v1.kernel.websocket.jupyter.org".parse().unwrap());
    let (mut socket, response) = tokio_tungstenite::connect_async(request).await.expect("websocket through the proxy");
    assert_eq!(response.headers()["sec-websocket-protocol"], "v1.kernel.websocket.jupyter.org");
    socket.send(WsMessage::text("hello")).await.unwrap();
    assert_eq!(socket.next().await.unwrap().unwrap(), WsMessage::text("echo hello"));
    socket.send(WsMessage::binary(vec![1u8, 2, 3])).await.unwrap();
    assert_eq!(socket.next().await.unwrap().unwrap(), WsMessage::binary(vec![3u8, 2, 1]));
    socket.close(None).await.unwrap();

    // A shell: binary frames carry the TCP bytes, as `determined.cli.tunnel` sends them to
    // `/proxy/<id>/`.
    let mut request = ws_url(master, "/proxy/shell-1/").into_client_request().unwrap();
    request.headers_mut().insert("authorization", format!("Bearer {token}").parse().unwrap());
    let (mut socket, _) = tokio_tungstenite::connect_async(request).await.expect("tunnel through the proxy");
    let sent: Vec<u8> = (0..200_000u32).map(|i| (i % 256) as u8).collect();
    socket.send(WsMessage::binary(sent.clone())).await.unwrap();
    let mut echoed = Vec::new();
    while echoed.len() < sent.len() {
        match socket.next().await.unwrap().unwrap() {
            WsMessage::Binary(bytes) => echoed.extend_from_slice(&bytes),
            other => panic!("unexpected frame {other:?}"),
        }
    }
    assert_eq!(echoed, sent);
    socket.close(None).await.unwrap();

    // Plain HTTP to a TCP service is refused with a reason.
    let reply = master.get("/proxy/shell-1/", Some(&token)).await;
    assert_error(&reply, 400, "InvalidArgument");
    assert!(reply.text.contains("websocket"), "{}", reply.text);
}

/// The TCP service closing its end closes the websocket (ssh exiting ends the tunnel).
pub async fn proxy_tcp_service_closing_closes_the_tunnel(master: &TestMaster) {
    let (token, owner_id) = owner(master).await;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut line = [0u8; 5];
        stream.read_exact(&mut line).await.unwrap();
        stream.write_all(b"SSH-2.0-test\r\n").await.unwrap();
    });
    master.proxies.register("shell-2", target(&address, owner_id, ProxyKind::Tcp, "SHELL"));
    let mut request = ws_url(master, "/proxy/shell-2/").into_client_request().unwrap();
    request.headers_mut().insert("cookie", format!("auth={token}").parse().unwrap());
    let (mut socket, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    socket.send(WsMessage::binary(b"hello".to_vec())).await.unwrap();
    assert_eq!(socket.next().await.unwrap().unwrap(), WsMessage::binary(b"SSH-2.0-test\r\n".to_vec()));
    let end = tokio::time::timeout(std::time::Duration::from_secs(10), socket.next()).await.expect("the tunnel ends");
    assert!(matches!(end, None | Some(Ok(WsMessage::Close(_))) | Some(Err(_))), "{end:?}");
}

pub async fn proxy_only_the_owner_or_an_admin_may_open_a_service(master: &TestMaster) {
    let service = start_http_service().await;
    let (owner_token, owner_id) = owner(master).await;
    let admin = master.login("admin", "").await;
    master.create_user(&admin, "other", "Passw0rd!").await;
    let other = master.login("other", "Passw0rd!").await;
    master.proxies.register("nb-1", target(&service, owner_id, ProxyKind::Http, "NOTEBOOK"));

    assert_error(&master.get("/proxy/nb-1/echo", None).await, 401, "Unauthenticated");
    assert_error(&master.get("/proxy/nb-1/echo", Some("garbage")).await, 401, "Unauthenticated");
    let denied = master.get("/proxy/nb-1/echo", Some(&other)).await;
    assert_error(&denied, 403, "PermissionDenied");
    assert!(denied.text.contains("only the owner of task nb-1 or an admin"), "{}", denied.text);
    assert_eq!(master.get("/proxy/nb-1/echo", Some(&owner_token)).await.status, 200);
    assert_eq!(master.get("/proxy/nb-1/echo", Some(&admin)).await.status, 200);

    // A websocket is refused the same way, before any upgrade.
    let mut request = ws_url(master, "/proxy/nb-1/ws").into_client_request().unwrap();
    request.headers_mut().insert("authorization", format!("Bearer {other}").parse().unwrap());
    match tokio_tungstenite::connect_async(request).await {
        Err(tungstenite::Error::Http(response)) => assert_eq!(response.status().as_u16(), 403),
        other => panic!("expected a 403, got {other:?}"),
    }

    let unknown = master.get("/proxy/no-such-task/", Some(&owner_token)).await;
    assert_error(&unknown, 404, "NotFound");
    assert!(unknown.text.contains("task no-such-task not found or has no running service"), "{}", unknown.text);
    // Anonymous callers cannot probe for task ids.
    assert_error(&master.get("/proxy/no-such-task/", None).await, 401, "Unauthenticated");

    // An unregistered service is gone at once.
    master.proxies.unregister("nb-1");
    assert_error(&master.get("/proxy/nb-1/echo", Some(&owner_token)).await, 404, "NotFound");

    // Upstream's `unauthenticated` proxy ports (shells: sshd checks the key) need no session.
    let open = ProxyTarget { unauthenticated: true, ..target(&service, owner_id, ProxyKind::Http, "SHELL") };
    master.proxies.register("open-1", open);
    assert_eq!(master.get("/proxy/open-1/echo", None).await.status, 200);
}

pub async fn proxy_to_a_service_that_is_down_is_502(master: &TestMaster) {
    let (token, owner_id) = owner(master).await;
    // A port that was just free: nothing listens there.
    let address = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().to_string()
    };
    master.proxies.register("nb-gone", target(&address, owner_id, ProxyKind::Http, "NOTEBOOK"));
    master.proxies.register("shell-gone", target(&address, owner_id, ProxyKind::Tcp, "SHELL"));

    let reply = master.get("/proxy/nb-gone/lab", Some(&token)).await;
    assert_error(&reply, 502, "Unavailable");
    assert!(reply.text.contains("task nb-gone"), "{}", reply.text);

    for path in ["/proxy/nb-gone/ws", "/proxy/shell-gone/"] {
        let mut request = ws_url(master, path).into_client_request().unwrap();
        request.headers_mut().insert("authorization", format!("Bearer {token}").parse().unwrap());
        match tokio_tungstenite::connect_async(request).await {
            Err(tungstenite::Error::Http(response)) => assert_eq!(response.status().as_u16(), 502, "{path}"),
            other => panic!("{path}: expected a 502, got {other:?}"),
        }
    }
}

/// Upstream's own tunnel (`python -m determined.cli.tunnel <master> <id>`, the `ProxyCommand` of
/// `det shell open`) carries bytes both ways through a shell's unauthenticated TCP service.
pub async fn proxy_upstream_tunnel_reaches_a_tcp_service(master: &TestMaster) {
    let Some(python) = upstream_python() else { return };
    let service = start_tcp_echo().await;
    let open = ProxyTarget { unauthenticated: true, ..target(&service, 1, ProxyKind::Tcp, "SHELL") };
    master.proxies.register("shell-py", open);
    let base = master.base.clone();
    let echoed = tokio::task::spawn_blocking(move || {
        use std::io::{Read, Write};
        let mut tunnel = std::process::Command::new(python)
            .args(["-m", "determined.cli.tunnel", &base, "shell-py"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("the tunnel starts");
        let payload = b"SSH-2.0-OpenSSH_9.6\r\n".repeat(500);
        tunnel.stdin.as_mut().unwrap().write_all(&payload).unwrap();
        let mut echoed = vec![0u8; payload.len()];
        tunnel.stdout.as_mut().unwrap().read_exact(&mut echoed).unwrap();
        drop(tunnel.stdin.take());
        let _ = tunnel.kill();
        let _ = tunnel.wait();
        (payload, echoed)
    });
    let (payload, echoed) = tokio::time::timeout(std::time::Duration::from_secs(60), echoed).await.expect("the tunnel answers").unwrap();
    assert_eq!(echoed, payload);
}

/// A Python with the upstream `determined` package, if this machine has one.
fn upstream_python() -> Option<std::path::PathBuf> {
    let candidates = [
        std::env::var_os("RESOLUTE_TEST_PYTHON").map(std::path::PathBuf::from),
        Some(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python")),
        Some("/work/cache/detvenv/bin/python".into()),
    ];
    let found = candidates.into_iter().flatten().find(|p| p.is_file());
    if found.is_none() {
        println!("skipped: no Python with the determined package (set RESOLUTE_TEST_PYTHON)");
    }
    found
}
