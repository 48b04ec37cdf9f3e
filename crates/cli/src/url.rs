//! Master URL canonicalization, mirroring upstream `api.canonicalize_master_url`.
//!
//! The canonical form keys the token cache (`auth.json`), which is shared with the upstream
//! Python CLI, so it must come out byte-for-byte the same as Python's for every input a user is
//! likely to type: explicit scheme, lower-cased host, explicit port, no trailing slash.

use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum UrlError {
    #[error("invalid master url {0}; master url must contain a nonempty hostname")]
    NoHost(String),
    #[error(
        "invalid master url {0}; master url must not contain username, password, query, or \
         fragment"
    )]
    ExtraParts(String),
    #[error("invalid master url {0}; port must be a number between 0 and 65535")]
    BadPort(String),
}

/// Converts a user-provided master address into the canonical URL upstream uses.
///
/// `localhost:8080` → `http://localhost:8080`, `http://127.0.0.1` → `http://127.0.0.1:80`.
pub fn canonicalize_master_url(url: &str) -> Result<String, UrlError> {
    canonicalize(url, true)
}

/// Upstream's `precanonicalize_v1_url` + canonicalize: used only to migrate v1 token stores, whose
/// keys may still carry parts that the strict form rejects; those are dropped instead.
pub fn precanonicalize_v1_url(url: &str) -> Result<String, UrlError> {
    canonicalize(url, false)
}

fn canonicalize(url: &str, strict: bool) -> Result<String, UrlError> {
    // Like upstream, the scheme test is a plain prefix match; anything else gets `http://`.
    let (full, default_port) = if url.starts_with("https://") {
        (url.to_owned(), 443)
    } else if url.starts_with("http://") {
        (url.to_owned(), 80)
    } else {
        (format!("http://{url}"), 8080)
    };
    let parts = split_url(&full);

    if parts.hostname.is_empty() {
        return Err(UrlError::NoHost(full));
    }
    let has_userinfo = !parts.username.is_empty() || !parts.password.is_empty();
    if strict && (has_userinfo || !parts.query.is_empty() || !parts.fragment.is_empty()) {
        return Err(UrlError::ExtraParts(full));
    }
    // Python's `.port` rejects non-numbers and values above 65535; `or default` maps 0 → default.
    let port = match parts.port {
        None | Some("") => default_port,
        Some(p) => match p.parse::<u16>() {
            Ok(0) => default_port,
            Ok(n) if p.bytes().all(|b| b.is_ascii_digit()) => n,
            _ => return Err(UrlError::BadPort(full)),
        },
    };
    // Python would drop the brackets of an IPv6 literal, producing an unusable URL; keep them.
    let host = if parts.hostname.contains(':') { format!("[{}]", parts.hostname) } else { parts.hostname };
    let out = format!("{}://{}:{}{}", parts.scheme, host, port, parts.path);
    Ok(out.trim_end_matches('/').to_owned())
}

struct UrlParts<'a> {
    scheme: &'a str,
    username: &'a str,
    password: &'a str,
    hostname: String,
    port: Option<&'a str>,
    path: &'a str,
    query: &'a str,
    fragment: &'a str,
}

/// A `urllib.parse.urlparse` work-alike for `scheme://...` strings.
fn split_url(url: &str) -> UrlParts<'_> {
    let (scheme, rest) = url.split_once("://").unwrap_or(("http", url));
    let netloc_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (netloc, rest) = rest.split_at(netloc_end);
    let (rest, fragment) = rest.split_once('#').unwrap_or((rest, ""));
    let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
    // urlparse splits `;params` off the last path segment; urlunparse(.., "", ..) then drops them.
    let last_seg = path.rfind('/').map_or(0, |i| i + 1);
    let path = match path[last_seg..].find(';') {
        Some(i) => &path[..last_seg + i],
        None => path,
    };

    let (userinfo, hostport) = match netloc.rsplit_once('@') {
        Some((u, h)) => (u, h),
        None => ("", netloc),
    };
    let (username, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));

    let (hostname, port) = if let Some(bracketed) = hostport.strip_prefix('[') {
        match bracketed.split_once(']') {
            Some((h, tail)) => (h, tail.strip_prefix(':')),
            None => (bracketed, None),
        }
    } else {
        match hostport.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (hostport, None),
        }
    };

    UrlParts { scheme, username, password, hostname: hostname.to_ascii_lowercase(), port, path, query, fragment }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(s: &str) -> String {
        canonicalize_master_url(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn adds_scheme_and_default_ports() {
        assert_eq!(canon("localhost:8080"), "http://localhost:8080");
        assert_eq!(canon("localhost"), "http://localhost:8080");
        assert_eq!(canon("http://127.0.0.1"), "http://127.0.0.1:80");
        assert_eq!(canon("https://example.com"), "https://example.com:443");
        assert_eq!(canon("https://example.com:8443/"), "https://example.com:8443");
        assert_eq!(canon("http://localhost:0"), "http://localhost:80");
    }

    #[test]
    fn keeps_paths_and_strips_trailing_slashes() {
        assert_eq!(canon("example.com/det/"), "http://example.com:8080/det");
        assert_eq!(canon("http://Example.COM:1234/a/b//"), "http://example.com:1234/a/b");
        assert_eq!(canon("http://host/a;params"), "http://host:80/a");
        assert_eq!(canon("http://host?"), "http://host:80");
    }

    #[test]
    fn ipv6_literals_keep_brackets() {
        assert_eq!(canon("http://[::1]:9000"), "http://[::1]:9000");
        assert_eq!(canon("[::1]"), "http://[::1]:8080");
    }

    #[test]
    fn rejects_credentials_query_fragment_and_bad_input() {
        for bad in ["http://u:p@host", "http://u@host", "host?x=1", "host#frag", ""] {
            assert!(canonicalize_master_url(bad).is_err(), "{bad} should be rejected");
        }
        assert_eq!(canonicalize_master_url("host:99999"), Err(UrlError::BadPort("http://host:99999".into())));
        assert!(canonicalize_master_url("host:http").is_err());
        assert!(canonicalize_master_url("http://:8080").is_err());
    }

    #[test]
    fn canonical_urls_are_fixed_points() {
        for s in ["http://localhost:8080", "https://a.b:443/x", "http://[::1]:80"] {
            assert_eq!(canon(s), s);
        }
    }

    #[test]
    fn v1_migration_drops_extra_parts() {
        assert_eq!(precanonicalize_v1_url("http://u:p@host:1/x?q#f").as_deref(), Ok("http://host:1/x"));
    }
}
