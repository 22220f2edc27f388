//! The server: a listener on a unix socket or on 127.0.0.1, one thread per
//! connection (handshake, then transmission), the control socket, and the
//! export they share behind one lock.

use crate::control;
use crate::export::Export;
use crate::handshake::{handshake, lock, Ending};
use crate::transmission::{serve, End};
use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Where the server listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Listen {
    /// A unix socket at this path (created; refused if the path exists).
    Unix(PathBuf),
    /// TCP on 127.0.0.1 at this port (0: any free port).
    Tcp(u16),
}

/// A connected socket of either kind.
pub enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    fn try_clone(&self) -> io::Result<Stream> {
        Ok(match self {
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
        })
    }
    fn shutdown(&self) {
        // Already closed by the client: nothing left to do.
        let _ = match self {
            Stream::Unix(s) => s.shutdown(Shutdown::Both),
            Stream::Tcp(s) => s.shutdown(Shutdown::Both),
        };
    }
    fn set_blocking(&self) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_nonblocking(false),
            Stream::Tcp(s) => {
                s.set_nodelay(true)?;
                s.set_nonblocking(false)
            }
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.flush(),
            Stream::Tcp(s) => s.flush(),
        }
    }
}

enum Listener {
    Unix(UnixListener, PathBuf),
    Tcp(TcpListener),
}

impl Listener {
    fn accept(&self) -> io::Result<Stream> {
        Ok(match self {
            Listener::Unix(l, _) => Stream::Unix(l.accept()?.0),
            Listener::Tcp(l) => Stream::Tcp(l.accept()?.0),
        })
    }
}

/// What every connection thread and the control socket share.
pub struct Shared {
    pub export: Mutex<Export>,
    /// Open connections: id -> (the power generation it was opened in, a
    /// handle to shut it down with).
    conns: Mutex<BTreeMap<u64, (u64, Stream)>>,
    next_id: AtomicU64,
    /// Events (connections, cuts, recoveries) go to the server's log.
    pub log: Box<dyn Fn(&str) + Send + Sync>,
}

impl Shared {
    /// Shuts down every connection opened before the current power
    /// generation (a cut drops them all).
    pub fn drop_stale_connections(&self) {
        let generation = lock(&self.export).generation();
        let conns = self.conns.lock().unwrap_or_else(|p| p.into_inner());
        for (g, s) in conns.values() {
            if *g < generation {
                s.shutdown();
            }
        }
    }

    fn drop_all_connections(&self) {
        let conns = self.conns.lock().unwrap_or_else(|p| p.into_inner());
        for (_, s) in conns.values() {
            s.shutdown();
        }
    }

    /// Prints the events the export logged since the last call.
    pub fn flush_events(&self, printed: &mut usize) {
        let e = lock(&self.export);
        for ev in &e.stats.events[*printed..] {
            (self.log)(ev);
        }
        *printed = e.stats.events.len();
    }
}

/// A bound server, ready to run.
pub struct Server {
    listener: Listener,
    control: Option<(UnixListener, PathBuf)>,
    pub shared: Arc<Shared>,
}

/// How often an idle accept loop looks for connections and at the stop flag.
const POLL: Duration = Duration::from_millis(20);
/// How often it looks within [`BUSY_WINDOW`] of its start or of its last
/// accept: clients that come in bursts (a script connecting for each step,
/// a control query after each command) wait a millisecond, not half of
/// `POLL`, and a server left idle still wakes only every `POLL`. (The NBD
/// tests connect and stop servers hundreds of times; at `POLL` alone they
/// spent seconds asleep.)
const BUSY_POLL: Duration = Duration::from_millis(1);
const BUSY_WINDOW: Duration = Duration::from_millis(500);

impl Server {
    /// Binds the listener (and the control socket, if a path is given).
    pub fn bind(listen: &Listen, control: Option<PathBuf>, export: Export, log: Box<dyn Fn(&str) + Send + Sync>) -> io::Result<Server> {
        let listener = match listen {
            Listen::Unix(p) => Listener::Unix(UnixListener::bind(p)?, p.clone()),
            Listen::Tcp(port) => Listener::Tcp(TcpListener::bind(("127.0.0.1", *port))?),
        };
        match &listener {
            Listener::Unix(l, _) => l.set_nonblocking(true)?,
            Listener::Tcp(l) => l.set_nonblocking(true)?,
        }
        let control = match control {
            Some(p) => {
                let l = UnixListener::bind(&p)?;
                l.set_nonblocking(true)?;
                Some((l, p))
            }
            None => None,
        };
        Ok(Server {
            listener,
            control,
            shared: Arc::new(Shared {
                export: Mutex::new(export),
                conns: Mutex::new(BTreeMap::new()),
                next_id: AtomicU64::new(0),
                log,
            }),
        })
    }

    /// The TCP port bound (for `Listen::Tcp(0)`).
    pub fn port(&self) -> Option<u16> {
        match &self.listener {
            Listener::Tcp(l) => l.local_addr().ok().map(|a| a.port()),
            Listener::Unix(..) => None,
        }
    }

    /// Accepts connections until `stop` is set; then drops every
    /// connection, waits for their threads, and hands the export back.
    pub fn run(self, stop: &AtomicBool) -> Export {
        let mut threads = Vec::new();
        let mut printed = 0;
        let mut last_accept = Instant::now();
        while !stop.load(Ordering::Relaxed) {
            let mut idle = true;
            match self.listener.accept() {
                Ok(s) => {
                    idle = false;
                    threads.push(self.spawn(s));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => (self.shared.log)(&format!("accept: {e}")),
            }
            if let Some((l, _)) = &self.control {
                match l.accept() {
                    Ok((s, _)) => {
                        idle = false;
                        // Its own thread: a control client that sends
                        // nothing must not hold up accepts.
                        let shared = Arc::clone(&self.shared);
                        threads.push(std::thread::spawn(move || control::handle(s, &shared)));
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => (self.shared.log)(&format!("control accept: {e}")),
                }
            }
            self.shared.flush_events(&mut printed);
            threads.retain(|t: &std::thread::JoinHandle<()>| !t.is_finished());
            if !idle {
                last_accept = Instant::now();
            } else if last_accept.elapsed() < BUSY_WINDOW {
                std::thread::sleep(BUSY_POLL);
            } else {
                std::thread::sleep(POLL);
            }
        }
        self.shared.drop_all_connections();
        for t in threads {
            let _ = t.join();
        }
        self.shared.flush_events(&mut printed);
        let Server { listener, control, shared } = self;
        for path in [
            match &listener {
                Listener::Unix(_, p) => Some(p.clone()),
                Listener::Tcp(_) => None,
            },
            control.map(|(_, p)| p),
        ]
        .into_iter()
        .flatten()
        {
            let _ = std::fs::remove_file(path);
        }
        let shared = Arc::try_unwrap(shared).unwrap_or_else(|_| unreachable!("every connection thread has ended"));
        shared.export.into_inner().unwrap_or_else(|p| p.into_inner())
    }

    fn spawn(&self, s: Stream) -> std::thread::JoinHandle<()> {
        let shared = Arc::clone(&self.shared);
        std::thread::spawn(move || connection(s, &shared))
    }
}

/// One connection, from handshake to its end.
fn connection(mut s: Stream, shared: &Shared) {
    let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
    if let Err(e) = s.set_blocking() {
        (shared.log)(&format!("connection {id}: {e}"));
        return;
    }
    let generation = {
        let mut e = lock(&shared.export);
        e.stats.connections += 1;
        e.generation()
    };
    match s.try_clone() {
        Ok(h) => {
            shared.conns.lock().unwrap_or_else(|p| p.into_inner()).insert(id, (generation, h));
        }
        Err(e) => {
            (shared.log)(&format!("connection {id}: {e}"));
            return;
        }
    }
    let end = match handshake(&mut s, &shared.export) {
        Ok(Ending::Transmission(n)) => match serve(&mut s, shared, n, generation) {
            End::Disconnect => "Disconnect".to_string(),
            // Clients such as fio's nbd engine close without NBD_CMD_DISC.
            End::Io(e) if e.kind() == io::ErrorKind::UnexpectedEof => "Disconnect (closed without NBD_CMD_DISC)".to_string(),
            End::Io(e) => format!("connection failed: {e}"),
            End::Violation(why) => format!("protocol violation, connection closed: {why}"),
            End::PowerGone => "dropped by a power cut".to_string(),
        },
        Ok(Ending::Closed(why)) => format!("closed in the handshake: {why}"),
        Err(e) => format!("handshake: {e}"),
    };
    shared.conns.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
    s.shutdown();
    if !end.starts_with("Disconnect") {
        (shared.log)(&format!("connection {id} ended: {end}"));
    }
}
