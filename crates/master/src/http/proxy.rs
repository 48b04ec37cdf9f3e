//! `ANY /proxy/{service}/…`: the reverse proxy to task services (JupyterLab, TensorBoard, a
//! shell's sshd), as upstream's `internal/proxy`.
//!
//! - HTTP is forwarded with its full path (`/proxy/<id>/…` and the query: notebooks and
//!   TensorBoard are started with that base URL), streaming bodies both ways over a pooled client.
//! - A websocket upgrade to an HTTP service becomes a websocket to the service, frame for frame.
//! - A websocket to a TCP service carries the connection's bytes in binary frames, as upstream's
//!   `determined.cli.tunnel` (the `ProxyCommand` of `det shell open`) sends and expects them.
//!
//! The caller's master credentials are not passed on: the service runs the task owner's code,
//! and an admin opening it must not hand their session to it. So the `Authorization: Bearer`
//! header that authenticated the caller and the `auth` cookie are removed; other cookies (the
//! service's own, e.g. Jupyter's `_xsrf`) and other `Authorization` schemes (Jupyter's
//! `token …`) pass.

use std::collections::HashMap;
use std::future::Future;
use std::pin::pin;
use std::time::Duration;

use axum::Extension;
use axum::body::{Body, Bytes};
use axum::extract::ws::{self, WebSocket, WebSocketUpgrade};
use axum::extract::{FromRequestParts, Path, Request, State};
use axum::http::header::{
    AUTHORIZATION, CONNECTION, COOKIE, HOST, PROXY_AUTHENTICATE, PROXY_AUTHORIZATION, SEC_WEBSOCKET_EXTENSIONS, SEC_WEBSOCKET_KEY,
    SEC_WEBSOCKET_PROTOCOL, SEC_WEBSOCKET_VERSION, TE, TRAILER, TRANSFER_ENCODING, UPGRADE,
};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, Uri, Version};
use axum::response::{IntoResponse, Redirect, Response};
use futures_util::{SinkExt, StreamExt};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use resolute_api::error::ErrorCode;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{self as ts, protocol::frame::CloseFrame as TsCloseFrame};

use super::extract::{authorization_bearer, bearer_token};
use crate::error::{ApiError, ApiResult};
use crate::services::{ProxyKind, ProxyRoute};
use crate::state::AppState;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one direction of a websocket may keep going after the other has ended (to let a
/// close frame through) before both are dropped.
const CLOSE_GRACE: Duration = Duration::from_secs(5);
const TCP_READ_CHUNK: usize = 64 * 1024;

/// The pooled HTTP/1 client to task services, shared by every proxied request.
#[derive(Clone)]
pub struct ProxyClient(Client<HttpConnector, Body>);

impl ProxyClient {
    pub fn new() -> ProxyClient {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.set_connect_timeout(Some(CONNECT_TIMEOUT));
        ProxyClient(Client::builder(TokioExecutor::new()).pool_idle_timeout(Duration::from_secs(90)).build(connector))
    }
}

/// `/proxy/{service}` → `/proxy/{service}/`: services are served under the trailing slash.
pub async fn redirect_to_slash(uri: Uri) -> Redirect {
    let query = uri.query().map(|q| format!("?{q}")).unwrap_or_default();
    Redirect::permanent(&format!("{}/{query}", uri.path()))
}

pub async fn proxy(State(state): State<AppState>, Extension(client): Extension<ProxyClient>, req: Request) -> Response {
    match serve(state, client, req).await {
        Ok(response) => response,
        Err(err) => err.into_response(),
    }
}

async fn serve(state: AppState, client: ProxyClient, req: Request) -> ApiResult<Response> {
    let (mut parts, body) = req.into_parts();
    let params = Path::<HashMap<String, String>>::from_request_parts(&mut parts, &state)
        .await
        .map_err(|rejection| ApiError::invalid(format!("invalid proxy path: {}", rejection.body_text())))?;
    let service_id = params.0.get("service").cloned().unwrap_or_default();

    let principal = match bearer_token(&parts) {
        Some(token) => state.auth.authenticate(token).await,
        None => Err(ApiError::unauthenticated(format!(
            "authentication required to open task {service_id}: send Authorization: Bearer <token> or the auth cookie"
        ))),
    };
    let authenticated_by_header = principal.is_ok() && authorization_bearer(&parts.headers).is_some();
    if principal.is_ok() && !authenticated_by_header {
        // The service's own pages POST and open websockets from this origin; other sites may not.
        super::csrf::check_cookie_request(&parts, state.serves_tls)?;
    }
    let route = state.proxies.authorize(&service_id, principal)?;
    route.touch();
    strip_master_credentials(&mut parts.headers, authenticated_by_header);

    let wants_websocket = parts.headers.get(UPGRADE).is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"websocket"));
    match (route.target().kind, wants_websocket) {
        (ProxyKind::Http, false) => forward_http(client, route, parts, body).await,
        (ProxyKind::Http, true) => websocket_to_service(route, parts).await,
        (ProxyKind::Tcp, true) => websocket_to_tcp(route, parts).await,
        (ProxyKind::Tcp, false) => Err(ApiError::invalid(format!(
            "task {} ({}) serves a TCP port, reached only through a websocket (as `det shell open` does)",
            route.service_id(),
            route.target().task_type
        ))),
    }
}

async fn forward_http(client: ProxyClient, route: ProxyRoute, mut parts: Parts, body: Body) -> ApiResult<Response> {
    let path = parts.uri.path_and_query().map_or("/", |pq| pq.as_str());
    parts.uri = format!("http://{}{path}", route.target().address)
        .parse()
        .map_err(|e| ApiError::invalid(format!("cannot forward {path} to task {}: {e}", route.service_id())))?;
    // The pool speaks HTTP/1.1 to services whatever the caller spoke to us.
    parts.version = Version::HTTP_11;
    strip_hop_by_hop(&mut parts.headers);
    let response = client.0.request(Request::from_parts(parts, body)).await.map_err(|e| unreachable(&route, &e))?;
    let (mut parts, body) = response.into_parts();
    strip_hop_by_hop(&mut parts.headers);
    Ok(Response::from_parts(parts, Body::new(body)))
}

/// Opens the websocket to the service first, so a service that is down or refuses the
/// handshake is answered as such, and the subprotocol it picked is the one we accept.
async fn websocket_to_service(route: ProxyRoute, mut parts: Parts) -> ApiResult<Response> {
    let mut upgrade = WebSocketUpgrade::from_request_parts(&mut parts, &())
        .await
        .map_err(|rejection| ApiError::invalid(format!("invalid websocket upgrade: {}", rejection.body_text())))?;
    let path = parts.uri.path_and_query().map_or("/", |pq| pq.as_str());
    let mut request = format!("ws://{}{path}", route.target().address)
        .into_client_request()
        .map_err(|e| ApiError::invalid(format!("cannot forward {path} to task {}: {e}", route.service_id())))?;
    strip_hop_by_hop(&mut parts.headers);
    for name in [SEC_WEBSOCKET_KEY, SEC_WEBSOCKET_VERSION, SEC_WEBSOCKET_EXTENSIONS] {
        parts.headers.remove(name);
    }
    // The client's Host goes through (as for HTTP), so a service's origin check sees the
    // address the browser used.
    let headers = request.headers_mut();
    for (name, value) in &parts.headers {
        if name == HOST {
            headers.insert(HOST, value.clone());
        } else {
            headers.append(name, value.clone());
        }
    }
    let (service, response) = match tokio_tungstenite::connect_async(request).await {
        Ok(connected) => connected,
        Err(ts::Error::Http(refusal)) => {
            let (parts, body) = refusal.into_parts();
            return Ok((parts.status, parts.headers, body.unwrap_or_default()).into_response());
        }
        Err(e) => return Err(unreachable(&route, &e)),
    };
    if let Some(protocol) = response.headers().get(SEC_WEBSOCKET_PROTOCOL) {
        upgrade.set_selected_protocol(protocol.clone());
    }
    Ok(upgrade.on_upgrade(move |socket| relay_websockets(socket, service, route)))
}

async fn relay_websockets<S>(caller: WebSocket, service: tokio_tungstenite::WebSocketStream<S>, route: ProxyRoute)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let (mut caller_tx, mut caller_rx) = caller.split();
    let (mut service_tx, mut service_rx) = service.split();
    let inbound = async {
        while let Some(Ok(message)) = caller_rx.next().await {
            route.touch();
            let closing = matches!(message, ws::Message::Close(_));
            if service_tx.send(to_tungstenite(message)).await.is_err() || closing {
                break;
            }
        }
        let _ = service_tx.close().await;
    };
    let outbound = async {
        while let Some(Ok(message)) = service_rx.next().await {
            route.touch();
            let closing = matches!(message, ts::Message::Close(_));
            let Some(message) = from_tungstenite(message) else { continue };
            if caller_tx.send(message).await.is_err() || closing {
                break;
            }
        }
        let _ = caller_tx.close().await;
    };
    until_both_end(inbound, outbound).await;
}

/// Connects to the service's port before accepting, so a port that is down is a 502.
async fn websocket_to_tcp(route: ProxyRoute, mut parts: Parts) -> ApiResult<Response> {
    let upgrade = WebSocketUpgrade::from_request_parts(&mut parts, &())
        .await
        .map_err(|rejection| ApiError::invalid(format!("invalid websocket upgrade: {}", rejection.body_text())))?;
    let stream = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(route.target().address.as_str()))
        .await
        .map_err(|_| unreachable(&route, &"connection timed out"))?
        .map_err(|e| unreachable(&route, &e))?;
    let _ = stream.set_nodelay(true);
    Ok(upgrade.on_upgrade(move |socket| relay_tcp(socket, stream, route)))
}

async fn relay_tcp(caller: WebSocket, stream: TcpStream, route: ProxyRoute) {
    let (mut tcp_rx, mut tcp_tx) = stream.into_split();
    let (mut caller_tx, mut caller_rx) = caller.split();
    let inbound = async {
        while let Some(Ok(message)) = caller_rx.next().await {
            route.touch();
            let written = match message {
                ws::Message::Binary(bytes) => tcp_tx.write_all(&bytes).await,
                // The tunnel sends binary frames only; text carries bytes just the same.
                ws::Message::Text(text) => tcp_tx.write_all(text.as_bytes()).await,
                ws::Message::Close(_) => break,
                ws::Message::Ping(_) | ws::Message::Pong(_) => Ok(()),
            };
            if written.is_err() {
                break;
            }
        }
        let _ = tcp_tx.shutdown().await;
    };
    let outbound = async {
        let mut buf = vec![0u8; TCP_READ_CHUNK];
        loop {
            match tcp_rx.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    route.touch();
                    if caller_tx.send(ws::Message::Binary(Bytes::copy_from_slice(&buf[..n]))).await.is_err() {
                        return;
                    }
                }
            }
        }
        let _ = caller_tx.send(ws::Message::Close(None)).await;
        let _ = caller_tx.close().await;
    };
    until_both_end(inbound, outbound).await;
}

/// Runs both directions of a relay; once one ends, the other has [`CLOSE_GRACE`] to finish.
async fn until_both_end(first: impl Future<Output = ()>, second: impl Future<Output = ()>) {
    let (mut first, mut second) = (pin!(first), pin!(second));
    tokio::select! {
        () = &mut first => { let _ = tokio::time::timeout(CLOSE_GRACE, second).await; }
        () = &mut second => { let _ = tokio::time::timeout(CLOSE_GRACE, first).await; }
    }
}

fn to_tungstenite(message: ws::Message) -> ts::Message {
    match message {
        ws::Message::Text(text) => ts::Message::Text(text.as_str().into()),
        ws::Message::Binary(bytes) => ts::Message::Binary(bytes),
        ws::Message::Ping(bytes) => ts::Message::Ping(bytes),
        ws::Message::Pong(bytes) => ts::Message::Pong(bytes),
        ws::Message::Close(frame) => {
            ts::Message::Close(frame.map(|f| TsCloseFrame { code: f.code.into(), reason: f.reason.as_str().into() }))
        }
    }
}

fn from_tungstenite(message: ts::Message) -> Option<ws::Message> {
    Some(match message {
        ts::Message::Text(text) => ws::Message::Text(text.as_str().into()),
        ts::Message::Binary(bytes) => ws::Message::Binary(bytes),
        ts::Message::Ping(bytes) => ws::Message::Ping(bytes),
        ts::Message::Pong(bytes) => ws::Message::Pong(bytes),
        ts::Message::Close(frame) => {
            ws::Message::Close(frame.map(|f| ws::CloseFrame { code: f.code.into(), reason: f.reason.as_str().into() }))
        }
        // Raw frames only appear when writing.
        ts::Message::Frame(_) => return None,
    })
}

fn unreachable(route: &ProxyRoute, err: &dyn std::fmt::Display) -> ApiError {
    ApiError::new(
        ErrorCode::Unavailable,
        format!(
            "the service of task {} ({}) at {} is not reachable: {err}",
            route.service_id(),
            route.target().task_type,
            route.target().address
        ),
    )
    .with_status(StatusCode::BAD_GATEWAY)
}

/// Removes the headers that describe one connection (RFC 9110 §7.6.1), including those the
/// `Connection` header names.
fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in [CONNECTION, PROXY_AUTHENTICATE, PROXY_AUTHORIZATION, TE, TRAILER, TRANSFER_ENCODING, UPGRADE] {
        headers.remove(name);
    }
    headers.remove("keep-alive");
}

/// Removes what authenticated the caller to the master (see the module comment).
fn strip_master_credentials(headers: &mut HeaderMap, authenticated_by_header: bool) {
    if authenticated_by_header {
        headers.remove(AUTHORIZATION);
    }
    if !headers.contains_key(COOKIE) {
        return;
    }
    let kept: Vec<HeaderValue> = headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(|v| v.split(';').map(str::trim).filter(|pair| !pair.is_empty() && !pair.starts_with("auth=")).collect::<Vec<_>>().join("; "))
        .filter(|v| !v.is_empty())
        .filter_map(|v| HeaderValue::from_str(&v).ok())
        .collect();
    headers.remove(COOKIE);
    for value in kept {
        headers.append(COOKIE, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hop_by_hop_headers_and_those_connection_names_are_removed() {
        let mut headers = HeaderMap::new();
        headers.insert(CONNECTION, HeaderValue::from_static("keep-alive, x-private"));
        headers.insert("keep-alive", HeaderValue::from_static("timeout=5"));
        headers.insert("x-private", HeaderValue::from_static("1"));
        headers.insert(TRANSFER_ENCODING, HeaderValue::from_static("chunked"));
        headers.insert("x-kept", HeaderValue::from_static("1"));
        strip_hop_by_hop(&mut headers);
        assert_eq!(headers.keys().map(|k| k.as_str()).collect::<Vec<_>>(), ["x-kept"]);
    }

    #[test]
    fn master_credentials_are_removed_and_service_cookies_kept() {
        let mut headers = HeaderMap::new();
        headers.insert(AUTHORIZATION, HeaderValue::from_static("Bearer v2.public.abc"));
        headers.append(COOKIE, HeaderValue::from_static("_xsrf=x1; auth=v2.public.abc; username-host=u"));
        headers.append(COOKIE, HeaderValue::from_static("auth=v2.public.abc"));
        strip_master_credentials(&mut headers, true);
        assert_eq!(headers.get(AUTHORIZATION), None);
        assert_eq!(headers.get_all(COOKIE).iter().collect::<Vec<_>>(), ["_xsrf=x1; username-host=u"]);

        // Authenticated by the cookie: the service's own Authorization scheme passes.
        let mut headers = HeaderMap::new();
        headers.insert(AUTHORIZATION, HeaderValue::from_static("token jupyter-token"));
        headers.insert(COOKIE, HeaderValue::from_static("auth=v2.public.abc"));
        strip_master_credentials(&mut headers, false);
        assert_eq!(headers.get(AUTHORIZATION).unwrap(), "token jupyter-token");
        assert_eq!(headers.get(COOKIE), None);
    }
}
