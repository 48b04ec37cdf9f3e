//! Host ports for a task's servers (`StartTask.port_env`): the agent asks the kernel for a free TCP
//! port per variable name (bind port 0), holds every socket until the task is about to be spawned,
//! so the names of one task never share a port, then releases them for the task to bind.
//!
//! The sockets bind the unspecified address (0.0.0.0): a port free there is free on every address
//! of the host, including the one the agent advertises to the master.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};

#[derive(Debug, thiserror::Error)]
pub enum PortError {
    #[error("port_env name {0:?} is not a valid environment variable name: it must be non-empty and contain no '=' or NUL")]
    InvalidName(String),
    #[error("cannot find a free TCP port for {name}: {source}")]
    Bind { name: String, source: std::io::Error },
}

/// Ports chosen for a task, held until [`PortReservation::release`].
#[derive(Debug, Default)]
pub struct PortReservation {
    ports: BTreeMap<String, u16>,
    sockets: Vec<TcpListener>,
}

impl PortReservation {
    /// A free port for each name (a name given twice gets one port).
    pub fn reserve(names: &[String]) -> Result<PortReservation, PortError> {
        let mut reservation = PortReservation::default();
        for name in names {
            if name.is_empty() || name.contains('=') || name.contains('\0') {
                return Err(PortError::InvalidName(name.clone()));
            }
            if reservation.ports.contains_key(name) {
                continue;
            }
            let bind = |source| PortError::Bind { name: name.clone(), source };
            let socket = TcpListener::bind(SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0)).map_err(bind)?;
            let port = socket.local_addr().map_err(bind)?.port();
            reservation.ports.insert(name.clone(), port);
            reservation.sockets.push(socket);
        }
        Ok(reservation)
    }

    /// Name → port.
    pub fn ports(&self) -> &BTreeMap<String, u16> {
        &self.ports
    }

    /// Closes the sockets so the task can bind the ports; returns name → port.
    pub fn release(self) -> BTreeMap<String, u16> {
        drop(self.sockets);
        self.ports
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_get_distinct_ports_that_are_free_once_released() {
        let names: Vec<String> = ["A", "B", "A"].iter().map(|s| s.to_string()).collect();
        let reservation = PortReservation::reserve(&names).unwrap();
        let ports = reservation.release();
        assert_eq!(ports.keys().collect::<Vec<_>>(), ["A", "B"]);
        assert_ne!(ports["A"], ports["B"]);
        for port in ports.values() {
            TcpListener::bind(("0.0.0.0", *port)).expect("a released port can be bound");
        }
    }

    #[test]
    fn invalid_names_are_refused() {
        for bad in ["", "A=B", "A\0"] {
            let err = PortReservation::reserve(&[bad.to_string()]).unwrap_err();
            assert!(matches!(err, PortError::InvalidName(_)), "{err}");
        }
    }
}
