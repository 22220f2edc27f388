//! What every test of the NBD server shares: a server on a unix socket in a
//! temporary directory, over a RAM device of the protocol's tiny preset,
//! run on a thread; clients connected to it; its control socket.
#![allow(dead_code)]

use serde_json::Value;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::thread::JoinHandle;
use std::time::Duration;
use txftl_ftl::{FtlConfig, ProtocolEntry, ProtocolOptions};
use txftl_nand::{preset, DataMode, Nand, ViolationPolicy};
use txftl_nbd::client::{self, Client, Haggle};
use txftl_nbd::{control, CutSchedule, Export, ExportConfig, Listen, Server};

/// How long a test waits on a socket before it calls the server hung.
pub const TIMEOUT: Duration = Duration::from_secs(20);

/// The export's name in every test.
pub const NAME: &str = "txftl";

/// A fresh device of `protocol`, formatted on its tiny preset, in RAM.
pub fn device(protocol: &str) -> Box<dyn txftl_ftl::AnyDevice> {
    device_with(protocol, &ProtocolOptions::default())
}

/// A fresh device of `protocol` with protocol options `opts`.
pub fn device_with(protocol: &str, opts: &ProtocolOptions) -> Box<dyn txftl_ftl::AnyDevice> {
    let entry = txftl_protocols::entry(protocol).expect("a known protocol");
    let p = preset(entry.nand.tiny_preset()).expect("a known preset");
    let nand = Nand::new(p.config(DataMode::Full, ViolationPolicy::Panic)).expect("the tiny NAND");
    txftl_protocols::format(protocol, nand, FtlConfig::default(), opts).expect("format")
}

/// The export of a fresh device.
pub fn export(protocol: &str, flush_is_commit: bool, schedule: CutSchedule) -> Result<Export, String> {
    export_with(protocol, ProtocolOptions::default(), flush_is_commit, schedule)
}

/// The export of a fresh device with protocol options `opts`.
pub fn export_with(protocol: &str, opts: ProtocolOptions, flush_is_commit: bool, schedule: CutSchedule) -> Result<Export, String> {
    let config = ExportConfig {
        name: NAME.into(),
        flush_is_commit,
        schedule,
    };
    Export::new(device_with(protocol, &opts), protocol, FtlConfig::default(), opts, config)
}

/// Panics on the server's threads (its connection threads are unnamed, its
/// accept loop is `nbd-server`), counted by a panic hook: the server
/// swallows a connection thread's panic, a test must not.
static SERVER_PANICS: AtomicUsize = AtomicUsize::new(0);
static HOOK: Once = Once::new();
const SERVER_THREAD: &str = "nbd-server";

fn count_server_panics() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if std::thread::current().name().is_none_or(|n| n == SERVER_THREAD) {
                SERVER_PANICS.fetch_add(1, Ordering::SeqCst);
            }
            previous(info)
        }));
    });
}

/// Fails if a server thread of this test binary panicked.
pub fn assert_no_server_panic() {
    assert_eq!(SERVER_PANICS.load(Ordering::SeqCst), 0, "a server thread panicked (see the output)");
}

/// A server running on a thread; stopped (and joined) when dropped.
pub struct TestServer {
    _dir: tempfile::TempDir,
    pub sock: PathBuf,
    pub ctl: PathBuf,
    pub protocol: String,
    pub entry: &'static ProtocolEntry,
    /// The export's size, bytes, and its page (the flash page).
    pub size: u64,
    pub page: u32,
    /// What the server logged.
    pub logs: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Export>>,
}

impl TestServer {
    pub fn start(protocol: &str) -> TestServer {
        TestServer::with(protocol, false, CutSchedule::default())
    }

    pub fn with(protocol: &str, flush_is_commit: bool, schedule: CutSchedule) -> TestServer {
        let e = export(protocol, flush_is_commit, schedule).expect("the export");
        TestServer::serve(protocol, e)
    }

    pub fn serve(protocol: &str, e: Export) -> TestServer {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let sock = dir.path().join("s.sock");
        let ctl = dir.path().join("c.sock");
        let (size, page, entry) = (e.size(), e.info().page_size, e.entry());
        let logs = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&logs);
        let log = Box::new(move |m: &str| sink.lock().unwrap_or_else(|p| p.into_inner()).push(m.to_string()));
        let server = Server::bind(&Listen::Unix(sock.clone()), Some(ctl.clone()), e, log).expect("bind");
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        count_server_panics();
        let thread = std::thread::Builder::new()
            .name(SERVER_THREAD.into())
            .spawn(move || server.run(&flag))
            .expect("the server thread");
        TestServer {
            _dir: dir,
            sock,
            ctl,
            protocol: protocol.to_string(),
            entry,
            size,
            page,
            logs,
            stop,
            thread: Some(thread),
        }
    }

    /// A raw connection to the export's socket (timeouts set).
    pub fn stream(&self) -> UnixStream {
        let s = UnixStream::connect(&self.sock).expect("connect to the server");
        s.set_read_timeout(Some(TIMEOUT)).expect("read timeout");
        s.set_write_timeout(Some(TIMEOUT)).expect("write timeout");
        s
    }

    /// A connection past the greeting, for option haggling.
    pub fn haggle(&self) -> Haggle<UnixStream> {
        Haggle::start(self.stream()).expect("the greeting")
    }

    pub fn try_connect(&self, o: &client::Options) -> client::Result<Client<UnixStream>> {
        Client::connect(self.stream(), o)
    }

    pub fn connect_with(&self, o: &client::Options) -> Client<UnixStream> {
        self.try_connect(o).unwrap_or_else(|e| panic!("connect with {o:?}: {e}"))
    }

    /// A client in the transmission phase: structured replies or not,
    /// block sizes asked for or not.
    pub fn connect(&self, structured: bool, block_sizes: bool) -> Client<UnixStream> {
        self.connect_with(&opts(structured, block_sizes))
    }

    /// A control command's answer after its `ok` line (panics on an error).
    pub fn ctl(&self, cmd: &str) -> String {
        match self.ctl_result(cmd) {
            Ok(a) => a,
            Err(e) => panic!("control command {cmd}: {e}"),
        }
    }

    pub fn ctl_result(&self, cmd: &str) -> Result<String, String> {
        control::send(&self.ctl, cmd).expect("the control socket")
    }

    pub fn stats(&self) -> Value {
        serde_json::from_str(self.ctl("stats-json").trim()).expect("stats JSON")
    }

    /// A power cut, then a power-on: the recovery report's JSON.
    pub fn cut_and_recover(&self) -> Value {
        self.ctl("power-cut");
        serde_json::from_str(self.ctl("power-on").trim()).expect("the recovery report")
    }

    pub fn logged(&self, needle: &str) -> bool {
        self.logs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .any(|l| l.contains(needle))
    }

    pub fn log_text(&self) -> String {
        self.logs.lock().unwrap_or_else(|p| p.into_inner()).join("\n")
    }

    /// Stops the server and hands the export back.
    pub fn stop(mut self) -> Export {
        let e = self.stop_thread().expect("the server thread");
        assert_no_server_panic();
        e
    }

    fn stop_thread(&mut self) -> Option<Export> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().map(|t| t.join().expect("the server thread panicked"))
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            // A test that already failed must not panic again here.
            let joined = t.join();
            if !std::thread::panicking() {
                assert!(joined.is_ok(), "the server thread panicked");
                assert_no_server_panic();
            }
        }
    }
}

pub fn opts(structured: bool, block_sizes: bool) -> client::Options {
    client::Options {
        export: NAME.into(),
        structured,
        block_sizes,
        export_name: false,
    }
}

/// `len` bytes of a pattern that differs by `seed` and by position.
pub fn pattern(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| seed.wrapping_mul(31).wrapping_add((i % 251) as u8).wrapping_add((i / 251) as u8))
        .collect()
}

/// A page-sized value whose every byte is `b`.
pub fn fill(b: u8, len: usize) -> Vec<u8> {
    vec![b; len]
}

/// Waits until `cond` holds (the server's accept loop polls), up to TIMEOUT.
pub fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !cond() {
        assert!(start.elapsed() < TIMEOUT, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Whether the server closed `s` (a read sees EOF or a reset).
pub fn closed(s: &mut UnixStream) -> bool {
    use std::io::Read;
    let mut buf = [0u8; 64];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(e) => panic!("waiting for the server to close: {e}"),
        }
    }
}

/// A short description of a page's bytes for a failure message: all one
/// byte, or its first bytes.
pub fn describe(b: &[u8]) -> String {
    match b.first() {
        Some(&f) if b.iter().all(|&x| x == f) => format!("{} x {f:#04x}", b.len()),
        _ => format!("{} bytes starting {:02x?}", b.len(), &b[..b.len().min(8)]),
    }
}
