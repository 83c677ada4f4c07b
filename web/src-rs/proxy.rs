//! A fault-injecting TCP proxy: every connection to [`FaultProxy::addr`] is a *link* relayed
//! to the upstream address by two threads, one per direction.
//!
//! - [`FaultProxy::half_open`]: every current link stops forwarding in both directions and
//!   stays open: the bytes each side sends are read and dropped, nothing is closed, so both
//!   ends see a healthy socket that carries nothing (a peer gone without a FIN, a NAT that
//!   forgot the flow). Links dialled afterwards forward normally.
//! - [`FaultProxy::cut`]: every current link is shut down in both directions at once.
//! - [`FaultProxy::refuse`]: connections dialled from then on are closed at once (a server
//!   that is down), until it is turned off again.
//!
//! A silent link stays silent when one of its ends closes (the other end never hears of it,
//! as across a dead path) until it has been silent for [`STALL_HOLD`]; then the proxy closes
//! it, so a long campaign does not pile up connections on the server.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

/// How long a silent link is kept open before the proxy closes it.
pub const STALL_HOLD: Duration = Duration::from_secs(20);

/// One relayed connection.
struct Link {
    client: TcpStream,
    server: TcpStream,
    /// Set by a half-open fault: bytes are read and dropped from then on.
    stalled: AtomicBool,
}

impl Link {
    fn close(&self) {
        let _ = self.client.shutdown(Shutdown::Both);
        let _ = self.server.shutdown(Shutdown::Both);
    }
}

#[derive(Default)]
struct Shared {
    links: Mutex<Vec<Arc<Link>>>,
    /// Silent links and when they went silent.
    stalled: Mutex<Vec<(Instant, Arc<Link>)>>,
    stopping: AtomicBool,
    /// New connections are closed at once.
    refusing: AtomicBool,
    accepted: AtomicU64,
}

/// The proxy; dropping it closes the listener and every link.
pub struct FaultProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl FaultProxy {
    /// Listens on a free loopback port and relays every connection to `upstream`.
    ///
    /// # Errors
    ///
    /// When no loopback port can be bound.
    pub fn start(upstream: SocketAddr) -> io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared::default());
        let accept = Arc::clone(&shared);
        let reaper = Arc::clone(&shared);
        thread::Builder::new()
            .name("fault-proxy-reaper".into())
            .spawn(move || {
                while !reaper.stopping.load(Ordering::SeqCst) {
                    thread::sleep(Duration::from_millis(500));
                    reaper
                        .stalled
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .retain(|(since, link)| {
                            let keep = since.elapsed() < STALL_HOLD;
                            if !keep {
                                link.close();
                            }
                            keep
                        });
                }
            })?;
        thread::Builder::new()
            .name("fault-proxy-accept".into())
            .spawn(move || {
                for client in listener.incoming() {
                    if accept.stopping.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(client) = client else { continue };
                    if accept.refusing.load(Ordering::SeqCst) {
                        let _ = client.shutdown(Shutdown::Both);
                        continue;
                    }
                    accept.accepted.fetch_add(1, Ordering::SeqCst);
                    if let Err(error) = relay(&accept, client, upstream) {
                        eprintln!("fault proxy: cannot relay a connection: {error}");
                    }
                }
            })?;
        Ok(Self { addr, shared })
    }

    /// Where the browser connects.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// How many connections the proxy has accepted so far.
    pub fn accepted(&self) -> u64 {
        self.shared.accepted.load(Ordering::SeqCst)
    }

    /// How many links forward now (not silenced, not cut).
    pub fn live_links(&self) -> usize {
        self.shared
            .links
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Every current link goes silent both ways and stays open. Returns how many.
    pub fn half_open(&self) -> usize {
        let links = self.take_links();
        let now = Instant::now();
        let mut stalled = self
            .shared
            .stalled
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for link in &links {
            link.stalled.store(true, Ordering::SeqCst);
            stalled.push((now, Arc::clone(link)));
        }
        links.len()
    }

    /// Every current link is closed both ways at once. Returns how many.
    pub fn cut(&self) -> usize {
        let links = self.take_links();
        for link in &links {
            link.close();
        }
        links.len()
    }

    /// While `on`, every connection dialled is closed at once, as by a server that is down
    /// (links already up are left as they are).
    pub fn refuse(&self, on: bool) {
        self.shared.refusing.store(on, Ordering::SeqCst);
    }

    /// The live links, forgotten by the proxy (a fault applies to the links of its moment).
    fn take_links(&self) -> Vec<Arc<Link>> {
        std::mem::take(
            &mut *self
                .shared
                .links
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees `stopping`.
        let _ = TcpStream::connect(self.addr);
        for link in self.take_links() {
            link.close();
        }
        for (_, link) in std::mem::take(
            &mut *self
                .shared
                .stalled
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        ) {
            link.close();
        }
    }
}

fn relay(shared: &Arc<Shared>, client: TcpStream, upstream: SocketAddr) -> io::Result<()> {
    let server = TcpStream::connect(upstream)?;
    client.set_nodelay(true)?;
    server.set_nodelay(true)?;
    let link = Arc::new(Link {
        client: client.try_clone()?,
        server: server.try_clone()?,
        stalled: AtomicBool::new(false),
    });
    shared
        .links
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(Arc::clone(&link));
    for (mut from, mut to) in [(client.try_clone()?, server.try_clone()?), (server, client)] {
        let link = Arc::clone(&link);
        thread::Builder::new()
            .name("fault-proxy-link".into())
            .spawn(move || {
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    match from.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            if link.stalled.load(Ordering::SeqCst) {
                                continue;
                            }
                            if to.write_all(&buf[..n]).is_err() {
                                break;
                            }
                        }
                    }
                }
                // One side ended: a live link passes it on; a silent one says nothing (the
                // reaper closes it after STALL_HOLD).
                if !link.stalled.load(Ordering::SeqCst) {
                    let _ = to.shutdown(Shutdown::Write);
                }
            })?;
    }
    Ok(())
}
