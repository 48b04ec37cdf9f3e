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

/// Whether `client_hash` matches what is stored.
pub async fn verify(stored: Option<String>, client_hash: String) -> bool {
    match stored {
        None => client_hash.is_empty(),
        Some(_) if client_hash.is_empty() => false,
        Some(phc) => tokio::task::spawn_blocking(move || {
            PasswordHash::new(&phc)
                .map(|parsed| Argon2::default().verify_password(client_hash.as_bytes(), &parsed).is_ok())
                .unwrap_or(false)
        })
        .await
        .unwrap_or(false),
    }
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
    }
}
