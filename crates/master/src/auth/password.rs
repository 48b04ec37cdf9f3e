//! Passwords travel as upstream's client-side hash, `sha512_hex(salt + password)` (blank stays
//! blank), and are stored as an Argon2id PHC string of that hash. A user with no stored hash has
//! a blank password, and only a blank password matches it.

use argon2::password_hash::{PasswordHasher, PasswordVerifier};
use argon2::{Argon2, PasswordHash};
use resolute_api::CLIENT_PASSWORD_SALT;
use sha2::{Digest, Sha512};

/// What the upstream clients send for `plain` (`isHashed: true`).
pub fn client_hash(plain: &str) -> String {
    if plain.is_empty() {
        return String::new();
    }
    let mut hasher = Sha512::new();
    hasher.update(CLIENT_PASSWORD_SALT.as_bytes());
    hasher.update(plain.as_bytes());
    hex::encode(hasher.finalize())
}

/// Normalises a submitted password to its client hash.
pub fn submitted_to_client_hash(password: &str, is_hashed: bool) -> String {
    if is_hashed { password.to_owned() } else { client_hash(password) }
}

/// The stored form of a client hash; `None` for a blank password. Runs off the async threads:
/// Argon2 is slow on purpose.
pub async fn hash_for_storage(client_hash: String) -> Option<String> {
    if client_hash.is_empty() {
        return None;
    }
    tokio::task::spawn_blocking(move || {
        // A fresh random salt is drawn per hash.
        Argon2::default().hash_password(client_hash.as_bytes()).ok().map(|h| h.to_string())
    })
    .await
    .ok()
    .flatten()
}

/// Whether `client_hash` matches what is stored; `stored` is `None` for a blank password and
/// `known` is false for a username that does not exist. Every case runs one Argon2 verification
/// (against [`dummy_phc`] when there is no stored hash to check), so the time a login takes tells
/// nothing about whether the user exists or has a password.
pub async fn verify_login(known: bool, stored: Option<String>, client_hash: String) -> bool {
    let check = plan(known, stored, client_hash);
    tokio::task::spawn_blocking(move || {
        let matched = PasswordHash::new(&check.phc)
            .map(|parsed| Argon2::default().verify_password(check.candidate.as_bytes(), &parsed).is_ok())
            .unwrap_or(false);
        match check.accept {
            Accept::IfMatches => matched,
            Accept::Always => true,
            Accept::Never => false,
        }
    })
    .await
    .unwrap_or(false)
}

/// Whether `client_hash` matches what is stored (for a known user).
pub async fn verify(stored: Option<String>, client_hash: String) -> bool {
    verify_login(true, stored, client_hash).await
}

/// The Argon2 check a login runs and how its result decides the login.
struct Check {
    phc: String,
    candidate: String,
    accept: Accept,
}

#[derive(Debug, PartialEq, Eq)]
enum Accept {
    IfMatches,
    Always,
    Never,
}

fn plan(known: bool, stored: Option<String>, client_hash: String) -> Check {
    match (known, stored) {
        (false, _) => Check { phc: dummy_phc().to_owned(), candidate: client_hash, accept: Accept::Never },
        (true, None) => {
            let accept = if client_hash.is_empty() { Accept::Always } else { Accept::Never };
            Check { phc: dummy_phc().to_owned(), candidate: client_hash, accept }
        }
        (true, Some(phc)) if client_hash.is_empty() => Check { phc, candidate: String::new(), accept: Accept::Never },
        (true, Some(phc)) => Check { phc, candidate: client_hash, accept: Accept::IfMatches },
    }
}

/// An Argon2id hash of a random secret, with the default parameters (so checking it costs what
/// checking a real one does), made once per process.
fn dummy_phc() -> &'static str {
    static DUMMY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DUMMY.get_or_init(|| {
        let (secret, _) = super::token::new_token();
        Argon2::default().hash_password(secret.as_bytes()).map(|h| h.to_string()).unwrap_or_default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_hash_matches_upstream_python() {
        // hashlib.sha512(("GubPEmmotfiK9TMD6Zdw" + "password").encode()).hexdigest()
        assert_eq!(client_hash("password"), PYTHON_HASH_OF_PASSWORD);
        assert_eq!(client_hash(""), "");
    }

    const PYTHON_HASH_OF_PASSWORD: &str = include_str!("testdata/password.sha512");

    #[tokio::test]
    async fn hashes_verify_and_blank_is_special() {
        let stored = hash_for_storage(client_hash("s3cret")).await;
        assert!(stored.as_deref().is_some_and(|s| s.starts_with("$argon2id$")));
        assert!(verify(stored.clone(), client_hash("s3cret")).await);
        assert!(!verify(stored.clone(), client_hash("wrong")).await);
        assert!(!verify(stored, String::new()).await, "a blank password never matches a set one");
        assert_eq!(hash_for_storage(String::new()).await, None);
        assert!(verify(None, String::new()).await);
        assert!(!verify(None, client_hash("x")).await);
        assert!(!verify(Some("not a phc string".into()), client_hash("x")).await);
        assert!(!verify_login(false, None, String::new()).await, "an unknown user never logs in");
        assert!(!verify_login(false, None, client_hash("x")).await);
    }

    #[test]
    fn every_login_runs_a_real_argon2_check() {
        // Unknown users, blank passwords and blank submissions cost the same Argon2 work as a
        // wrong password, so timing cannot tell them apart.
        let real = Argon2::default().hash_password(b"x").unwrap().to_string();
        let cases = [
            (false, None, client_hash("x")),
            (false, None, String::new()),
            (true, None, String::new()),
            (true, None, client_hash("x")),
            (true, Some(real.clone()), String::new()),
            (true, Some(real.clone()), client_hash("x")),
        ];
        for (known, stored, submitted) in cases {
            let check = plan(known, stored.clone(), submitted);
            let parsed = PasswordHash::new(&check.phc).expect("a real PHC string");
            assert_eq!(parsed.algorithm.as_str(), "argon2id", "{known} {stored:?}");
            assert_eq!(parsed.params, PasswordHash::new(&real).unwrap().params, "same cost parameters");
        }
        assert_eq!(plan(false, None, String::new()).accept, Accept::Never);
        assert_eq!(plan(true, None, String::new()).accept, Accept::Always);
    }
}
