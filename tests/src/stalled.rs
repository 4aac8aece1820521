//! Addresses where a TCP connect hangs, and a count of the connects hanging: for tests of how
//! many connects a client starts at once.
//!
//! A listener whose accept queue is full makes the kernel drop further SYNs, so a connect to
//! it stays in `SYN_SENT` (retransmitting) until the client gives up. [`stalled_listeners`]
//! opens such listeners on 127.0.0.1 (backlog 0, the queue filled by one connection it keeps);
//! [`syn_sent_to`] counts this machine's sockets in `SYN_SENT` towards given ports, from
//! `/proc/net/tcp` (Linux only; elsewhere it reports 0).

use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use tokio::net::{TcpListener, TcpSocket};

/// Listeners that accept nothing, with the connections that fill their queues (keep both
/// alive for as long as connects must hang).
#[derive(Debug)]
pub struct Stalled {
    /// The listeners (never accepted from).
    pub listeners: Vec<TcpListener>,
    /// Their ports.
    pub ports: Vec<u16>,
    fillers: Vec<TcpStream>,
}

impl Stalled {
    /// Connections that fill the queues (for messages).
    pub fn fillers(&self) -> usize {
        self.fillers.len()
    }
}

/// `n` listeners on 127.0.0.1 whose accept queues are full. Panics when a socket cannot be
/// made.
pub fn stalled_listeners(n: usize) -> Stalled {
    let mut out = Stalled {
        listeners: Vec::with_capacity(n),
        ports: Vec::with_capacity(n),
        fillers: Vec::new(),
    };
    let mut addrs = Vec::with_capacity(n);
    for _ in 0..n {
        let socket = TcpSocket::new_v4().expect("socket");
        socket
            .bind("127.0.0.1:0".parse().expect("address"))
            .expect("bind");
        let listener = socket.listen(0).expect("listen");
        let addr: SocketAddr = listener.local_addr().expect("local address");
        addrs.push(addr);
        out.ports.push(addr.port());
        out.listeners.push(listener);
    }
    // Fill the queues: connects succeed until a queue is full, then one times out. All
    // listeners at once, a few rounds.
    let mut open: Vec<SocketAddr> = addrs;
    for _ in 0..4 {
        if open.is_empty() {
            break;
        }
        let results: Vec<(SocketAddr, Option<TcpStream>)> = std::thread::scope(|scope| {
            let handles: Vec<_> = open
                .iter()
                .map(|a| {
                    let a = *a;
                    scope.spawn(move || {
                        (
                            a,
                            TcpStream::connect_timeout(&a, Duration::from_millis(150)).ok(),
                        )
                    })
                })
                .collect();
            handles.into_iter().filter_map(|h| h.join().ok()).collect()
        });
        open.clear();
        for (a, s) in results {
            if let Some(s) = s {
                out.fillers.push(s);
                open.push(a);
            }
        }
    }
    out
}

/// Sockets of this machine in `SYN_SENT` towards 127.0.0.1 on any of `ports`.
pub fn syn_sent_to(ports: &[u16]) -> usize {
    let Ok(table) = std::fs::read_to_string("/proc/net/tcp") else {
        return 0;
    };
    table
        .lines()
        .skip(1)
        .filter(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            let (Some(remote), Some(state)) = (cols.get(2), cols.get(3)) else {
                return false;
            };
            let Some((ip, port)) = remote.split_once(':') else {
                return false;
            };
            *state == "02"
                && ip == "0100007F"
                && u16::from_str_radix(port, 16).is_ok_and(|p| ports.contains(&p))
        })
        .count()
}
