//! The control socket: one command a connection, as a line of text
//! (`power-cut`, `power-on`, `stats`, `stats-json`), answered with text
//! (JSON for `stats-json` and for `power-on`'s recovery report) and a
//! closed connection. The first line of an answer is `ok` or `error: ...`.

use crate::handshake::lock;
use crate::server::Shared;
use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

/// The commands, as `txftl nbd ctl` sends them.
pub const COMMANDS: &[&str] = &["power-cut", "power-on", "stats", "stats-json"];

/// Answers one control connection.
pub fn handle(s: UnixStream, shared: &Shared) {
    let _ = s.set_nonblocking(false);
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let mut line = String::new();
    let mut r = BufReader::new(&s);
    let answer = match r.read_line(&mut line) {
        Ok(_) => answer(line.trim(), shared),
        Err(e) => format!("error: reading the command: {e}\n"),
    };
    let mut w = &s;
    let _ = w.write_all(answer.as_bytes());
}

fn answer(cmd: &str, shared: &Shared) -> String {
    match cmd {
        "power-cut" => {
            let generation = {
                let mut e = lock(&shared.export);
                if !e.powered() {
                    return "error: power is already off\n".to_string();
                }
                e.cut("control socket");
                e.generation()
            };
            shared.drop_stale_connections();
            format!("ok\npower off (cut {generation}): every connection dropped; `power-on` recovers from the NAND\n")
        }
        "power-on" => {
            let mut e = lock(&shared.export);
            match e.power_on("power-on") {
                Ok(report) => format!(
                    "ok\n{}\n",
                    serde_json::to_string(&report).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
                ),
                Err(msg) => format!("error: {msg}\n"),
            }
        }
        "stats" => format!("ok\n{}", crate::stats::table(&lock(&shared.export).stats_json())),
        "stats-json" => format!("ok\n{}\n", lock(&shared.export).stats_json()),
        other => format!("error: unknown command {other:?} (commands: {})\n", COMMANDS.join(", ")),
    }
}

/// Sends `cmd` to the control socket at `path`; the answer after its `ok`
/// line, or the error the server gave.
pub fn send(path: &Path, cmd: &str) -> io::Result<Result<String, String>> {
    let mut s = UnixStream::connect(path)?;
    s.set_read_timeout(Some(Duration::from_secs(600)))?;
    s.write_all(format!("{cmd}\n").as_bytes())?;
    let mut all = String::new();
    io::Read::read_to_string(&mut s, &mut all)?;
    Ok(match all.split_once('\n') {
        Some(("ok", rest)) => Ok(rest.to_string()),
        Some((first, _)) => Err(first.trim_start_matches("error: ").to_string()),
        None => Err(format!("no answer from the server ({all:?})")),
    })
}
