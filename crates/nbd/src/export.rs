//! The device behind the export: byte ranges turned into page operations,
//! what survives a power cut, transactions between flushes, and the power
//! itself (a cut drops every piece of DRAM state; power-on recovers from the
//! NAND alone).
//!
//! What a client may rely on, as the NBD specification implies for a device
//! with a volatile write cache (`NBD_FLAG_SEND_FLUSH`, `NBD_FLAG_SEND_FUA`):
//! - a write is programmed before its reply, but promised only once a
//!   `NBD_CMD_FLUSH` replied after it, or if it was sent with FUA: the
//!   device's own contract (after `flush` returns every earlier write
//!   survives; before, a page holds its old or its new value);
//! - each write is all or nothing up to the atomic unit
//!   ([`atomic_unit`]): one flash page on every protocol (a page's program
//!   either checks out or is ignored by recovery); on a transactional
//!   protocol a write spanning several pages is one device transaction, so
//!   the whole write is atomic;
//! - with `flush_is_commit` (transactional protocols), everything written
//!   between two flushes is one device transaction: after a cut, all of it
//!   or none of it.
//!
//! Commands reach the device one at a time (the export sits behind one
//! lock), so the device clock advances by each command's latency.

use crate::schedule::CutSchedule;
use crate::stats::ServeStats;
use std::collections::BTreeSet;
use txftl_ftl::{AnyDevice, DeviceError, DeviceInfo, FtlConfig, ProtocolEntry, ProtocolOptions, RecoveryReport, Tid};
use txftl_nand::Nand;

/// What the server was asked for, beside the device.
#[derive(Clone, Debug)]
pub struct ExportConfig {
    /// The export's name (`NBD_OPT_LIST`, `NBD_OPT_GO`); the empty name
    /// (the default export) is accepted too.
    pub name: String,
    /// Group what arrives between two flushes into one device transaction
    /// (transactional protocols only: refused on others).
    pub flush_is_commit: bool,
    pub schedule: CutSchedule,
}

/// Why a command failed: the NBD error to send, and a message for the
/// client (structured replies carry it) and the server's log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandError {
    pub errno: u32,
    pub message: String,
}

/// What a command ended in beside success.
#[derive(Debug)]
pub enum Failure {
    /// The command failed; the connection goes on.
    Error(CommandError),
    /// Power went during the command (a scheduled cut) or the device is off:
    /// the connection is dropped without a reply.
    PowerGone,
}

impl Failure {
    fn error(errno: u32, message: impl Into<String>) -> Failure {
        Failure::Error(CommandError {
            errno,
            message: message.into(),
        })
    }
}

pub type Outcome<T> = Result<T, Failure>;

/// The device's power, with what it holds in each state.
enum Power {
    On(Box<dyn AnyDevice>),
    /// Cut: the NAND alone is left (a failed power-on leaves it here too).
    Off(Box<Nand>),
    /// Only between a take and a put back.
    Moving,
}

/// The atomic unit of a protocol's writes over NBD, in flash pages: what an
/// NVMe device would report as AWUN/AWUPF. `None`: the whole write (a
/// device transaction, bounded by the largest request, `max_payload`).
pub fn atomic_unit(entry: &ProtocolEntry) -> Option<u32> {
    if entry.transactional {
        None
    } else {
        Some(1)
    }
}

/// The atomic unit in words, for `txftl protocols` and the server's banner.
pub fn atomic_unit_text(entry: &ProtocolEntry) -> &'static str {
    match atomic_unit(entry) {
        Some(_) => "one flash page (a write across pages may land in part)",
        None => {
            "the whole write (one device transaction per write; a write the protocol cannot hold in one \
             fails whole, ENOSPC); with --flush-is-commit, everything between two flushes"
        }
    }
}

/// The largest request this server takes, bytes (the NBD convention).
pub const MAX_PAYLOAD: u32 = 32 * 1024 * 1024;

pub struct Export {
    pub config: ExportConfig,
    protocol: String,
    ftl: FtlConfig,
    opts: ProtocolOptions,
    entry: &'static ProtocolEntry,
    info: DeviceInfo,
    power: Power,
    /// Bumped at every cut: connections of an older one are dropped.
    generation: u64,
    /// The open group of `flush_is_commit`, and the trims held back until
    /// the next commit point (a trim has no transaction).
    group: Option<Tid>,
    group_trims: BTreeSet<u32>,
    next_tid: Tid,
    pub stats: ServeStats,
}

impl Export {
    /// Serves `dev` (mounted from `protocol`'s image, with `ftl` and `opts`,
    /// which a power-on mounts with again).
    pub fn new(
        dev: Box<dyn AnyDevice>,
        protocol: &str,
        ftl: FtlConfig,
        opts: ProtocolOptions,
        config: ExportConfig,
    ) -> Result<Export, String> {
        let entry = dev.entry();
        if config.flush_is_commit && !entry.transactional {
            return Err(format!(
                "--flush-is-commit needs a transactional protocol; `{}` has no transactions (its atomic unit is one flash page)",
                entry.name
            ));
        }
        let info = dev.info();
        let mut e = Export {
            config,
            protocol: protocol.to_string(),
            ftl,
            opts,
            entry,
            info,
            power: Power::On(dev),
            generation: 0,
            group: None,
            group_trims: BTreeSet::new(),
            next_tid: 1,
            stats: ServeStats::default(),
        };
        if let Some(r) = e.dev().and_then(|d| d.recovery_report()) {
            e.stats.record_mount(r, "start");
        }
        e.arm_schedule();
        Ok(e)
    }

    pub fn info(&self) -> DeviceInfo {
        self.info
    }
    pub fn entry(&self) -> &'static ProtocolEntry {
        self.entry
    }
    pub fn size(&self) -> u64 {
        self.info.logical_pages as u64 * self.info.page_size as u64
    }
    pub fn generation(&self) -> u64 {
        self.generation
    }
    pub fn powered(&self) -> bool {
        matches!(self.power, Power::On(_))
    }

    fn dev(&mut self) -> Option<&mut Box<dyn AnyDevice>> {
        match &mut self.power {
            Power::On(d) => Some(d),
            _ => None,
        }
    }

    /// The device, or `PowerGone` while power is off.
    fn on(&mut self) -> Outcome<&mut Box<dyn AnyDevice>> {
        self.dev().ok_or(Failure::PowerGone)
    }

    /// The device's clock, ns (0 while power is off).
    pub fn now_ns(&mut self) -> u64 {
        self.dev().map_or(0, |d| d.now_ns())
    }

    /// Turns a device error into the command's failure; a power loss (a
    /// scheduled cut landed) cuts the power, recovers and powers on again.
    fn fail(&mut self, e: DeviceError) -> Failure {
        match e {
            DeviceError::PowerLoss => {
                self.stats.scheduled_cuts += 1;
                self.cut("scheduled cut");
                let _ = self.power_on("after the scheduled cut");
                Failure::PowerGone
            }
            DeviceError::NoSpace => Failure::error(crate::wire::ENOSPC, e.to_string()),
            DeviceError::TableFull { .. } => Failure::error(
                crate::wire::ENOSPC,
                format!("{e}: the write is larger than one transaction of `{}` can hold", self.entry.name),
            ),
            DeviceError::ReadOnly(_) => Failure::error(crate::wire::EPERM, e.to_string()),
            e => Failure::error(crate::wire::EIO, e.to_string()),
        }
    }

    /// Runs `op` on the device and adds its latency to `*ns`.
    fn device(&mut self, ns: &mut u64, op: impl FnOnce(&mut dyn AnyDevice) -> Result<u64, DeviceError>) -> Outcome<()> {
        let dev = self.on()?;
        match op(&mut **dev) {
            Ok(t) => {
                *ns += t;
                Ok(())
            }
            Err(e) => Err(self.fail(e)),
        }
    }

    /// Before a command: a scheduled cut at an instant that has passed lands now.
    pub fn before_command(&mut self) -> Outcome<()> {
        let now = self.now_ns();
        if self.powered() && self.config.schedule.instant_due(now, self.stats.scheduled_cuts) {
            self.stats.scheduled_cuts += 1;
            self.cut(&format!("scheduled cut at {now} ns of the device clock"));
            let _ = self.power_on("after the scheduled cut");
            return Err(Failure::PowerGone);
        }
        self.on().map(|_| ())
    }

    fn fresh_tid(&mut self) -> Tid {
        let t = self.next_tid;
        self.next_tid = self.next_tid.checked_add(1).unwrap_or(1);
        t
    }

    /// The transaction a write goes into: the open group (begun if need
    /// be), a fresh one for a write across pages on a transactional
    /// protocol (`own`: committed at the write's end), or none.
    fn write_tx(&mut self, pages: u64, ns: &mut u64) -> Outcome<(Option<Tid>, bool)> {
        if self.config.flush_is_commit {
            if let Some(t) = self.group {
                return Ok((Some(t), false));
            }
            let t = self.fresh_tid();
            self.device(ns, |d| d.begin(t))?;
            self.group = Some(t);
            return Ok((Some(t), false));
        }
        if self.entry.transactional && pages > 1 {
            let t = self.fresh_tid();
            self.device(ns, |d| d.begin(t))?;
            return Ok((Some(t), true));
        }
        Ok((None, false))
    }

    /// Reads page `lpn` as the client sees it now (through the open group).
    fn read_page(&mut self, lpn: u32, buf: &mut [u8], ns: &mut u64) -> Outcome<()> {
        match self.group {
            Some(t) => self.device(ns, |d| d.read_tx(t, lpn, buf)),
            None => self.device(ns, |d| d.read(lpn, buf)),
        }
    }

    /// Reads `len` bytes at `offset` (checked in range by the caller) into `out`.
    pub fn read(&mut self, offset: u64, out: &mut [u8]) -> Outcome<u64> {
        let ps = self.info.page_size as u64;
        let mut page = vec![0u8; ps as usize];
        let mut ns = 0;
        let mut at = 0usize;
        while at < out.len() {
            let pos = offset + at as u64;
            let (lpn, within) = ((pos / ps) as u32, (pos % ps) as usize);
            let n = (ps as usize - within).min(out.len() - at);
            self.read_page(lpn, &mut page, &mut ns)?;
            out[at..at + n].copy_from_slice(&page[within..within + n]);
            at += n;
        }
        Ok(ns)
    }

    /// Writes `data` at `offset` (checked in range by the caller): each
    /// page whole (a page the write covers in part is read and patched
    /// first), in one transaction where the protocol has them.
    /// `data` None: zeroes (`NBD_CMD_WRITE_ZEROES`), `len` bytes.
    pub fn write(&mut self, offset: u64, data: Option<&[u8]>, len: u64, fua: bool) -> Outcome<u64> {
        let ps = self.info.page_size as u64;
        let (first, last) = (offset / ps, (offset + len - 1) / ps);
        let mut ns = 0;
        let (tid, own) = self.write_tx(last - first + 1, &mut ns)?;
        if own {
            self.stats.atomic_writes += 1;
        }
        let written = self.write_pages(offset, data, len, tid, &mut ns);
        if let Err(f) = written {
            if let (Failure::Error(_), Some(t), true) = (&f, tid, own) {
                // The write fails whole: its transaction goes.
                let _ = self.device(&mut ns, |d| d.abort(t));
            }
            return Err(f);
        }
        if let (Some(t), true) = (tid, own) {
            self.device(&mut ns, |d| d.commit(t))?;
        }
        if fua {
            ns += self.make_durable()?;
        }
        Ok(ns)
    }

    fn write_pages(&mut self, offset: u64, data: Option<&[u8]>, len: u64, tid: Option<Tid>, ns: &mut u64) -> Outcome<()> {
        let ps = self.info.page_size as u64;
        let mut page = vec![0u8; ps as usize];
        let mut at = 0u64;
        while at < len {
            let pos = offset + at;
            let (lpn, within) = ((pos / ps) as u32, (pos % ps) as usize);
            let n = (ps - within as u64).min(len - at) as usize;
            if n < ps as usize {
                self.read_page(lpn, &mut page, ns)?;
                self.stats.partial_page_writes += 1;
            }
            match data {
                Some(d) => page[within..within + n].copy_from_slice(&d[at as usize..at as usize + n]),
                None => page[within..within + n].fill(0),
            }
            self.group_trims.remove(&lpn);
            match tid {
                Some(t) => self.write_in_tx(t, lpn, &page, ns)?,
                None => self.device(ns, |d| d.write(lpn, &page))?,
            }
            at += n as u64;
        }
        Ok(())
    }

    /// A page into transaction `t`; a full group commits where it stands
    /// and a new one takes the page (counted: the group was split).
    fn write_in_tx(&mut self, t: Tid, lpn: u32, page: &[u8], ns: &mut u64) -> Outcome<()> {
        let dev = self.on()?;
        match dev.write_tx(t, lpn, page) {
            Ok(n) => {
                *ns += n;
                Ok(())
            }
            Err(DeviceError::TableFull { .. }) if self.group == Some(t) => {
                self.stats.groups_split += 1;
                *ns += self.commit_group()?;
                let (t, _) = self.write_tx(1, ns)?;
                let t = t.expect("a group is open after write_tx with flush_is_commit");
                self.device(ns, |d| d.write_tx(t, lpn, page))
            }
            Err(e) => Err(self.fail(e)),
        }
    }

    /// Trims the whole pages in `offset..offset+len` (a part page is left
    /// as it is: a trim is a hint). With `flush_is_commit`, trims wait for
    /// the next commit point (a trim has no transaction), where they are
    /// applied and flushed.
    pub fn trim(&mut self, offset: u64, len: u64, fua: bool) -> Outcome<u64> {
        let ps = self.info.page_size as u64;
        let (first, end) = (offset.div_ceil(ps), (offset + len) / ps);
        let mut ns = 0;
        for lpn in first..end {
            if self.config.flush_is_commit {
                self.group_trims.insert(lpn as u32);
            } else {
                self.device(&mut ns, |d| d.trim(lpn as u32))?;
            }
        }
        if fua {
            ns += self.make_durable()?;
        }
        Ok(ns)
    }

    /// `NBD_CMD_FLUSH`: every write replied to before it becomes durable.
    pub fn flush(&mut self) -> Outcome<u64> {
        self.make_durable()
    }

    fn make_durable(&mut self) -> Outcome<u64> {
        if self.config.flush_is_commit {
            return self.commit_group();
        }
        let mut ns = 0;
        self.device(&mut ns, |d| d.flush())?;
        Ok(ns)
    }

    /// Commits the open group (none open: nothing to do), then applies the
    /// trims it held back and flushes them.
    fn commit_group(&mut self) -> Outcome<u64> {
        let mut ns = 0;
        if let Some(t) = self.group {
            self.device(&mut ns, |d| d.commit(t))?;
            self.group = None;
            self.stats.groups_committed += 1;
        }
        let trims = std::mem::take(&mut self.group_trims);
        for &lpn in &trims {
            self.device(&mut ns, |d| d.trim(lpn))?;
        }
        if !trims.is_empty() {
            self.device(&mut ns, |d| d.flush())?;
        }
        Ok(ns)
    }

    /// Power goes now: the device's DRAM state is dropped, the NAND alone
    /// is kept. Connections of this generation are to be dropped.
    pub fn cut(&mut self, why: &str) {
        let power = std::mem::replace(&mut self.power, Power::Moving);
        let nand = match power {
            Power::On(dev) => {
                self.stats.add_boot(&dev.stats());
                let mut nand = dev.into_nand();
                nand.power_off();
                Box::new(nand)
            }
            Power::Off(n) => n,
            Power::Moving => unreachable!("power is never left moving"),
        };
        self.power = Power::Off(nand);
        self.group = None;
        self.group_trims.clear();
        self.generation += 1;
        self.stats.power_cuts += 1;
        self.stats.log(format!("power cut ({why})"));
    }

    /// Power comes back: recovery from the NAND alone. Its report is kept
    /// (and printed by the caller); a failed recovery leaves power off.
    pub fn power_on(&mut self, why: &str) -> Result<RecoveryReport, String> {
        let power = std::mem::replace(&mut self.power, Power::Moving);
        let mut nand = match power {
            Power::Off(n) => n,
            on @ Power::On(_) => {
                self.power = on;
                return Err("power is on".to_string());
            }
            Power::Moving => unreachable!("power is never left moving"),
        };
        nand.power_on();
        match txftl_protocols::mount_or_return(&self.protocol, *nand, self.ftl.clone(), &self.opts) {
            Ok(dev) => {
                let report = dev.recovery_report().unwrap_or_default();
                self.power = Power::On(dev);
                self.stats.record_mount(report, why);
                self.arm_schedule();
                Ok(report)
            }
            Err((e, nand)) => {
                self.power = Power::Off(nand);
                let msg = format!("recovery failed: {e}");
                self.stats.log(msg.clone());
                Err(msg)
            }
        }
    }

    /// Arms the schedule's next cut on the NAND just powered on.
    fn arm_schedule(&mut self) {
        let cuts_done = self.stats.scheduled_cuts;
        let schedule = self.config.schedule.clone();
        if let Some(dev) = self.dev() {
            schedule.arm(dev.nand_mut(), cuts_done);
        }
    }

    /// The device's counters now and over every earlier boot.
    pub fn stats_json(&mut self) -> serde_json::Value {
        let now = self.dev().map(|d| d.stats());
        let now_ns = self.now_ns();
        self.stats.json(self.entry, now.as_ref(), now_ns, self.powered())
    }

    /// Clean shutdown: the open group commits, the device flushes and
    /// checkpoints, and the NAND (its image) is handed back.
    pub fn close(mut self) -> Result<Nand, String> {
        if self.powered() {
            self.commit_group().map_err(|f| format!("committing the open group: {f:?}"))?;
        }
        match std::mem::replace(&mut self.power, Power::Moving) {
            Power::On(dev) => dev.close().map_err(|e| e.to_string()),
            Power::Off(nand) => Ok(*nand),
            Power::Moving => unreachable!("power is never left moving"),
        }
    }
}
