//! A loopback TCP proxy whose open connections can be cut, to show what a client does when
//! its connection dies under it while the server stays up.

use std::sync::{Arc, Mutex};

use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// A TCP proxy on a free 127.0.0.1 port forwarding every connection to one target. Dropping
/// it stops accepting and cuts every connection.
#[derive(Debug)]
pub struct Proxy {
    /// The port it listens on (127.0.0.1).
    pub port: u16,
    conns: Arc<Mutex<Vec<JoinHandle<()>>>>,
    accept: JoinHandle<()>,
}

impl Proxy {
    /// Starts forwarding connections to `target` (`host:port`). Panics when it cannot bind.
    pub async fn start(target: String) -> Proxy {
        let l = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the proxy");
        let port = l.local_addr().expect("the proxy's address").port();
        let conns: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let c = conns.clone();
        let accept = tokio::spawn(async move {
            while let Ok((mut a, _)) = l.accept().await {
                let target = target.clone();
                let h = tokio::spawn(async move {
                    if let Ok(mut b) = TcpStream::connect(&target).await {
                        let _ = tokio::io::copy_bidirectional(&mut a, &mut b).await;
                    }
                });
                c.lock().expect("proxy connections").push(h);
            }
        });
        Proxy {
            port,
            conns,
            accept,
        }
    }

    /// Drops every open connection (the listener keeps accepting).
    pub fn cut(&self) {
        for h in self.conns.lock().expect("proxy connections").drain(..) {
            h.abort();
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.cut();
    }
}
