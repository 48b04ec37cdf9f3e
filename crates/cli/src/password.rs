//! Client-side password hashing, exactly as upstream's `api.salt_and_hash`.

use resolute_api::CLIENT_PASSWORD_SALT;
use sha2::{Digest, Sha512};

/// `sha512_hex(salt + password)`; the empty password stays empty, because the master treats an
/// empty hashed password as "no password" (the default users start out that way).
pub fn salt_and_hash(password: &str) -> String {
    if password.is_empty() {
        return String::new();
    }
    let mut hasher = Sha512::new();
    hasher.update(CLIENT_PASSWORD_SALT.as_bytes());
    hasher.update(password.as_bytes());
    hex::encode(hasher.finalize())
}

#[cfg(test)]
mod tests {
    use super::salt_and_hash;

    // Expected values from: python3 -c "import hashlib;
    //   print(hashlib.sha512(('GubPEmmotfiK9TMD6Zdw' + pw).encode()).hexdigest())"
    #[test]
    fn matches_python_hashlib() {
        assert_eq!(
            salt_and_hash("password"),
            "112ded61f568879685bb7849596d3372f9de8e18733483f25363123bc4aa98eb\
             7abe69b4c0487140dafce136cc1c5e452cc93748f6ef961e26325bc34717da65"
        );
        assert_eq!(
            salt_and_hash("pässwörd"),
            "9cde514def3cf1f44ec9ef89c8f319148793b49c241edff99e0730e6ed71a967\
             d44fe258a93d5bcba7e40b47026629b03e596775ecb93fd23e415e1956e41398"
        );
    }

    #[test]
    fn empty_password_is_not_hashed() {
        assert_eq!(salt_and_hash(""), "");
    }
}
