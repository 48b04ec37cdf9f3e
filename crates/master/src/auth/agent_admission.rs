//! Who may join as an agent: the decision on an `/agents` upgrade, from the cluster's join secret
//! (if configured), the `Authorization: Bearer` value the agent presented, and the peer address.
//!
//! With a secret, only an agent presenting it is admitted, wherever it connects from. Without
//! one, only agents on this machine (loopback peers) are: an open cluster must not hand trials,
//! their model files and session tokens to whoever can reach its port.

use std::net::SocketAddr;

use sha2::{Digest, Sha256};

/// Why an agent was refused; the message is what the agent prints.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentRefusal {
    #[error(
        "this master requires the cluster's agent join secret: set security.agent_secret in the agent's agent.yaml \
         (or DET_SECURITY_AGENT_SECRET, or --security-agent-secret) to the master's security.agent_secret"
    )]
    MissingSecret,
    #[error("the agent join secret is wrong: the agent's security.agent_secret must equal the master's security.agent_secret")]
    WrongSecret,
    #[error(
        "this master has no agent join secret (security.agent_secret), so it accepts agents only from its own machine \
         (loopback); the agent connected from {0}. Set security.agent_secret on the master and the same value on the agent"
    )]
    RemoteWithoutSecret(String),
}

/// Admits or refuses an agent. `authorization` is the raw header value; `peer` the connection's
/// remote address (`None` when the transport does not tell it, which counts as remote).
pub fn admit_agent(secret: Option<&str>, authorization: Option<&str>, peer: Option<SocketAddr>) -> Result<(), AgentRefusal> {
    let presented = authorization.and_then(bearer).filter(|s| !s.is_empty());
    match secret {
        Some(secret) => match presented {
            None => Err(AgentRefusal::MissingSecret),
            Some(presented) if secrets_equal(secret, presented) => Ok(()),
            Some(_) => Err(AgentRefusal::WrongSecret),
        },
        None => match peer {
            Some(addr) if addr.ip().to_canonical().is_loopback() => Ok(()),
            Some(addr) => Err(AgentRefusal::RemoteWithoutSecret(addr.ip().to_canonical().to_string())),
            None => Err(AgentRefusal::RemoteWithoutSecret("an unknown address".to_owned())),
        },
    }
}

/// `Bearer <token>` → `<token>` (the scheme is case-insensitive).
fn bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// Compares in time independent of where the values differ and of their lengths: both are hashed
/// first, and the digests compared without an early exit.
fn secrets_equal(a: &str, b: &str) -> bool {
    let (a, b) = (Sha256::digest(a.as_bytes()), Sha256::digest(b.as_bytes()));
    a.iter().zip(b.iter()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(text: &str) -> Option<SocketAddr> {
        Some(text.parse().unwrap())
    }

    #[test]
    fn with_a_secret_only_its_bearer_is_admitted_from_anywhere() {
        let secret = Some("s3cret");
        assert_eq!(admit_agent(secret, Some("Bearer s3cret"), addr("10.1.2.3:5000")), Ok(()));
        assert_eq!(admit_agent(secret, Some("bearer  s3cret "), addr("127.0.0.1:5000")), Ok(()));
        assert_eq!(admit_agent(secret, None, addr("127.0.0.1:5000")), Err(AgentRefusal::MissingSecret));
        assert_eq!(admit_agent(secret, Some("Bearer "), addr("127.0.0.1:5000")), Err(AgentRefusal::MissingSecret));
        assert_eq!(admit_agent(secret, Some("Basic czNjcmV0"), addr("127.0.0.1:5000")), Err(AgentRefusal::MissingSecret));
        assert_eq!(admit_agent(secret, Some("Bearer s3cre"), addr("127.0.0.1:5000")), Err(AgentRefusal::WrongSecret));
        assert_eq!(admit_agent(secret, Some("Bearer s3cret2"), None), Err(AgentRefusal::WrongSecret));
    }

    #[test]
    fn without_a_secret_only_loopback_peers_are_admitted() {
        assert_eq!(admit_agent(None, None, addr("127.0.0.1:1")), Ok(()));
        assert_eq!(admit_agent(None, None, addr("127.8.9.10:1")), Ok(()));
        assert_eq!(admit_agent(None, None, addr("[::1]:1")), Ok(()));
        assert_eq!(admit_agent(None, None, addr("[::ffff:127.0.0.1]:1")), Ok(()));
        // A presented secret does not help when the master has none.
        let refused = admit_agent(None, Some("Bearer anything"), addr("192.168.1.7:40000")).unwrap_err();
        assert_eq!(refused, AgentRefusal::RemoteWithoutSecret("192.168.1.7".to_owned()));
        assert!(refused.to_string().contains("security.agent_secret") && refused.to_string().contains("192.168.1.7"));
        assert_eq!(admit_agent(None, None, addr("[::ffff:10.0.0.1]:1")), Err(AgentRefusal::RemoteWithoutSecret("10.0.0.1".to_owned())));
        assert!(admit_agent(None, None, None).is_err());
    }

    #[test]
    fn refusals_name_the_cause() {
        assert!(AgentRefusal::MissingSecret.to_string().contains("requires the cluster's agent join secret"));
        assert!(AgentRefusal::WrongSecret.to_string().contains("secret is wrong"));
    }
}
