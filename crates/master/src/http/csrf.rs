//! Cross-site request forgery: the `auth` cookie a browser holds must not let another site act
//! for the user. Two layers:
//!
//! - the cookie the master sets at login is `HttpOnly; SameSite=Lax` (and `Secure` when the
//!   master serves TLS), so browsers do not attach it to other sites' sub-requests or POSTs;
//! - a request authenticated by the cookie (no `Authorization` header) that changes anything —
//!   any method but GET/HEAD/OPTIONS, or a websocket upgrade — must carry an `Origin` (else a
//!   `Referer`) naming the master itself (its `Host` header). Browsers send `Origin` on every
//!   cross-origin POST and websocket, so a forged request is refused with 403. A request with
//!   neither header did not come from a browser page (browsers cannot be made to drop both), so
//!   it passes; `Origin: null` (sandboxed frames, some redirects) is refused.
//!
//! Requests with `Authorization: Bearer` are untouched: a browser never adds that header on its
//! own. The comparison is on host and port, not scheme, so a master behind a TLS-terminating
//! proxy that passes `Host` through works.

use axum::http::header::{HOST, ORIGIN, REFERER, UPGRADE};
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method};

use crate::error::{ApiError, ApiResult};

/// The `Set-Cookie` value for a new session token.
pub fn session_cookie(token: &str, secure: bool, lifespan_days: u32) -> String {
    let max_age = u64::from(lifespan_days) * 86_400;
    let secure = if secure { "; Secure" } else { "" };
    format!("auth={token}; Path=/; Max-Age={max_age}; HttpOnly; SameSite=Lax{secure}")
}

/// The `Set-Cookie` value that removes the session cookie (logout).
pub fn cleared_session_cookie(secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("auth=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax{secure}")
}

/// `Ok` unless `parts` is a state-changing request from another origin (see the module doc).
/// Call only for requests authenticated by the cookie.
pub fn check_cookie_request(parts: &Parts, tls: bool) -> ApiResult<()> {
    let safe_method = matches!(parts.method, Method::GET | Method::HEAD | Method::OPTIONS);
    let websocket = parts.headers.get(UPGRADE).is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"websocket"));
    if safe_method && !websocket {
        return Ok(());
    }
    let Some(claimed) = request_origin(&parts.headers) else {
        return Ok(());
    };
    let own = own_authority(parts, tls);
    let matches = match (&claimed, &own) {
        (Claimed::Origin(origin), Some(own)) => authority_of(origin).is_some_and(|theirs| &theirs == own),
        _ => false,
    };
    if matches {
        return Ok(());
    }
    let shown = match &claimed {
        Claimed::Origin(origin) => origin.clone(),
        Claimed::Opaque => "null".to_owned(),
    };
    Err(ApiError::forbidden(format!(
        "cross-site request refused: a {} authenticated by the auth cookie must come from this master's own pages \
         (origin {shown} is not {}); other clients should send Authorization: Bearer <token>",
        parts.method,
        own.as_deref().unwrap_or("(no Host header)")
    )))
}

enum Claimed {
    /// `scheme://host[:port]`, as sent.
    Origin(String),
    /// `Origin: null`, or a value that is not an origin.
    Opaque,
}

/// The origin a browser claims: `Origin`, else the origin part of `Referer`; `None` when neither
/// header is present.
fn request_origin(headers: &HeaderMap) -> Option<Claimed> {
    if let Some(origin) = headers.get(ORIGIN) {
        return Some(match origin.to_str() {
            Ok(o) if !o.eq_ignore_ascii_case("null") => Claimed::Origin(o.to_owned()),
            _ => Claimed::Opaque,
        });
    }
    let referer = headers.get(REFERER)?;
    Some(match referer.to_str().ok().and_then(origin_of_url) {
        Some(origin) => Claimed::Origin(origin),
        None => Claimed::Opaque,
    })
}

/// `scheme://authority` of an absolute URL.
fn origin_of_url(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    Some(format!("{scheme}://{authority}"))
}

/// `host[:port]` of an origin, lower-cased, without the scheme's default port.
fn authority_of(origin: &str) -> Option<String> {
    let (scheme, authority) = origin.split_once("://")?;
    let authority = authority.rsplit('@').next()?.to_ascii_lowercase();
    if authority.is_empty() {
        return None;
    }
    let default_port = match scheme.to_ascii_lowercase().as_str() {
        "http" | "ws" => ":80",
        "https" | "wss" => ":443",
        _ => return None,
    };
    Some(authority.strip_suffix(default_port).map(str::to_owned).unwrap_or(authority))
}

/// The master's own `host[:port]` as the client addressed it (the `Host` header, or the
/// request line's authority for HTTP/2).
fn own_authority(parts: &Parts, tls: bool) -> Option<String> {
    let host = parts
        .headers
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned)
        .or_else(|| parts.uri.authority().map(|a| a.to_string()))?;
    let scheme = if tls { "https" } else { "http" };
    authority_of(&format!("{scheme}://{host}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::Request;

    fn parts(method: &str, headers: &[(&str, &str)]) -> Parts {
        let mut req = Request::builder().method(method).uri("/api/v1/experiments/1");
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        req.body(()).unwrap().into_parts().0
    }

    #[test]
    fn same_origin_and_headerless_mutations_pass() {
        let host = ("host", "master.example:8080");
        assert!(check_cookie_request(&parts("PATCH", &[host, ("origin", "http://master.example:8080")]), false).is_ok());
        assert!(check_cookie_request(&parts("POST", &[host, ("origin", "https://MASTER.example:8080")]), false).is_ok());
        assert!(check_cookie_request(&parts("POST", &[host, ("referer", "http://master.example:8080/det/experiments")]), false).is_ok());
        assert!(check_cookie_request(&parts("DELETE", &[host]), false).is_ok(), "no Origin, no Referer: not a browser page");
        assert!(check_cookie_request(&parts("GET", &[host, ("origin", "http://evil.example")]), false).is_ok(), "reads are not mutations");
        let default_port = ("host", "master.example");
        assert!(check_cookie_request(&parts("POST", &[default_port, ("origin", "https://master.example")]), true).is_ok());
        assert!(
            check_cookie_request(&parts("POST", &[("host", "master.example:443"), ("origin", "https://master.example")]), true).is_ok()
        );
    }

    #[test]
    fn foreign_opaque_and_websocket_cross_origin_are_refused() {
        let host = ("host", "master.example:8080");
        let refused = check_cookie_request(&parts("POST", &[host, ("origin", "http://evil.example")]), false).unwrap_err();
        assert_eq!(refused.status, 403);
        assert!(refused.message.contains("http://evil.example") && refused.message.contains("master.example:8080"), "{}", refused.message);
        assert!(check_cookie_request(&parts("POST", &[host, ("origin", "http://master.example:9090")]), false).is_err());
        assert!(check_cookie_request(&parts("POST", &[host, ("origin", "null")]), false).is_err());
        assert!(check_cookie_request(&parts("PUT", &[host, ("referer", "http://evil.example/x")]), false).is_err());
        assert!(check_cookie_request(&parts("POST", &[host, ("origin", "http://master.example:8080.evil.example")]), false).is_err());
        let ws = [host, ("upgrade", "websocket"), ("origin", "http://evil.example")];
        assert!(check_cookie_request(&parts("GET", &ws), false).is_err());
    }

    #[test]
    fn the_cookie_is_http_only_and_same_site() {
        let cookie = session_cookie("t0k", false, 7);
        assert!(cookie.starts_with("auth=t0k;"));
        assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax") && cookie.contains("Max-Age=604800"));
        assert!(!cookie.contains("Secure"));
        assert!(session_cookie("t0k", true, 7).ends_with("; Secure"));
        assert!(cleared_session_cookie(false).contains("Max-Age=0"));
    }
}
