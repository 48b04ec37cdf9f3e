//! `det tunnel` against an in-test websocket echo server standing in for `/proxy/<id>/`.

use std::sync::{Arc, Mutex};

use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};

use super::Det;

/// What the server saw of the upgrade request: path and Authorization header.
type Seen = Arc<Mutex<Vec<(String, String)>>>;

/// Echoes every binary frame back until the client closes.
fn echo_server() -> (String, Seen) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let seen: Seen = Arc::default();
    let record = seen.clone();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            while let Ok((stream, _)) = listener.accept().await {
                let record = record.clone();
                tokio::spawn(async move {
                    // The callback's signature is tungstenite's; its large error type is not ours to box.
                    #[allow(clippy::result_large_err)]
                    let callback = |req: &Request, resp: Response| {
                        let auth = req.headers().get("authorization").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
                        record.lock().unwrap().push((req.uri().path().to_owned(), auth));
                        Ok(resp)
                    };
                    let Ok(mut ws) = tokio_tungstenite::accept_hdr_async(stream, callback).await else { return };
                    while let Some(Ok(msg)) = ws.next().await {
                        match msg {
                            Message::Binary(b) => {
                                let _ = ws.send(Message::Binary(b)).await;
                            }
                            Message::Close(_) => break,
                            _ => {}
                        }
                    }
                    let _ = ws.close(None).await;
                });
            }
        });
    });
    (url, seen)
}

#[test]
fn tunnel_pipes_stdin_and_stdout_through_the_proxy_websocket() {
    let (url, seen) = echo_server();
    let det = Det::new(&url);
    let service = "7f1c2d3e-0000-4000-8000-000000000001";
    let input = "SSH-2.0-OpenSSH_9.6\r\nbinary \u{1} payload\n".repeat(500);
    let out = det.run(&["tunnel", &url, service], &input, &[("DET_USER_TOKEN", "fake-token")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), input);
    assert_eq!(*seen.lock().unwrap(), [(format!("/proxy/{service}/"), "Bearer fake-token".to_owned())]);

    // Nothing listening: one clear error.
    let err = det.fails(&["tunnel", "http://127.0.0.1:1", service], "", &[]);
    assert!(err.contains("Connection to ws://127.0.0.1:1/proxy/"), "{err}");
}
