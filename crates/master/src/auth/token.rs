//! Session tokens: 32 random bytes, hex-encoded for the client; only their SHA-256 is stored, so
//! a leaked database does not leak live sessions.

use rand::RngCore;
use sha2::{Digest, Sha256};

/// A fresh token and the hash to store for it.
pub fn new_token() -> (String, String) {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let token = hex::encode(bytes);
    let hash = token_hash(&token);
    (token, hash)
}

pub fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_unique_and_hashed() {
        let (a, ha) = new_token();
        let (b, _) = new_token();
        assert_ne!(a, b);
        assert_eq!(a.len(), 64);
        assert_eq!(token_hash(&a), ha);
        assert_ne!(a, ha);
    }
}
