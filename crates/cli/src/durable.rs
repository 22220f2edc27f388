//! `--sync flush` for devices the CLI drives: a device whose flushes and
//! commits also sync its image file to the host's disk.
//!
//! Why a wrapper: the FTL does not yet call `Nand::flush_image` when a flush or
//! commit completes (that is where the call belongs, so that every host of the
//! device, the loadable SQLite extension included, gets it). Until it does, the
//! CLI wraps the device it mounts and makes the call itself after every
//! successful `flush` and `commit`; once the FTL makes it, this wrapper only
//! repeats a cheap sync of a clean file and can go.

use txftl_ftl::{Device, DeviceError, DeviceInfo, DeviceStats, Lpn, RecoveryReport, Tid};
use txftl_nand::Nand;
use txftl_protocols::AnyDevice;

pub struct SyncOnFlush {
    inner: Box<dyn AnyDevice>,
}

impl SyncOnFlush {
    pub fn wrap(inner: Box<dyn AnyDevice>) -> Box<dyn AnyDevice> {
        Box::new(SyncOnFlush { inner })
    }

    fn synced(&self, done: u64) -> Result<u64, DeviceError> {
        self.inner.nand().flush_image()?;
        Ok(done)
    }
}

// Every method forwards, so the wrapper changes nothing but the syncs
// (including the default methods: the inner device may override them).
impl Device for SyncOnFlush {
    fn info(&self) -> DeviceInfo {
        self.inner.info()
    }
    fn read(&mut self, lpn: Lpn, buf: &mut [u8]) -> Result<u64, DeviceError> {
        self.inner.read(lpn, buf)
    }
    fn write(&mut self, lpn: Lpn, data: &[u8]) -> Result<u64, DeviceError> {
        self.inner.write(lpn, data)
    }
    fn flush(&mut self) -> Result<u64, DeviceError> {
        let done = self.inner.flush()?;
        self.synced(done)
    }
    fn trim(&mut self, lpn: Lpn) -> Result<u64, DeviceError> {
        self.inner.trim(lpn)
    }
    fn stats(&self) -> DeviceStats {
        self.inner.stats()
    }
    fn reset_stats(&mut self) {
        self.inner.reset_stats()
    }
    fn now_ns(&self) -> u64 {
        self.inner.now_ns()
    }
    fn begin(&mut self, tid: Tid) -> Result<u64, DeviceError> {
        self.inner.begin(tid)
    }
    fn write_tx(&mut self, tid: Tid, lpn: Lpn, data: &[u8]) -> Result<u64, DeviceError> {
        self.inner.write_tx(tid, lpn, data)
    }
    fn read_tx(&mut self, tid: Tid, lpn: Lpn, buf: &mut [u8]) -> Result<u64, DeviceError> {
        self.inner.read_tx(tid, lpn, buf)
    }
    fn commit(&mut self, tid: Tid) -> Result<u64, DeviceError> {
        let done = self.inner.commit(tid)?;
        self.synced(done)
    }
    fn abort(&mut self, tid: Tid) -> Result<u64, DeviceError> {
        self.inner.abort(tid)
    }
    fn unsupported(&self, what: &'static str) -> DeviceError {
        self.inner.unsupported(what)
    }
}

impl AnyDevice for SyncOnFlush {
    fn check_invariants(&self) -> Result<(), String> {
        self.inner.check_invariants()
    }
    fn recovery_report(&self) -> Option<RecoveryReport> {
        self.inner.recovery_report()
    }
    fn into_nand(self: Box<Self>) -> Nand {
        self.inner.into_nand()
    }
    fn close(self: Box<Self>) -> Result<Nand, DeviceError> {
        self.inner.close()
    }
    fn nand(&self) -> &Nand {
        self.inner.nand()
    }
    fn wear_spread(&self) -> (u32, u32) {
        self.inner.wear_spread()
    }
    fn erase_counts(&self) -> Vec<u32> {
        self.inner.erase_counts()
    }
    fn checkpoint_erase_counts(&self) -> Vec<u32> {
        self.inner.checkpoint_erase_counts()
    }
    fn nand_mut(&mut self) -> &mut Nand {
        self.inner.nand_mut()
    }
    fn transactional(&self) -> bool {
        self.inner.transactional()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use txftl_nand::{preset, DataMode, ImageSync, ViolationPolicy};

    #[test]
    fn flushes_and_commits_sync_the_image_in_flush_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dev.img");
        let p = preset("tiny").unwrap();
        let mut nand = Nand::create_image(&path, p.config(DataMode::Full, ViolationPolicy::Error)).unwrap();
        nand.set_image_sync(ImageSync::Flush);
        let dev = txftl_protocols::format("xftl", nand, Default::default(), &Default::default()).unwrap();
        let mut dev = SyncOnFlush::wrap(dev);
        let page = vec![1u8; dev.info().page_size as usize];
        let before = dev.nand().image_syncs();
        dev.write(0, &page).unwrap();
        assert_eq!(dev.nand().image_syncs(), before, "a write alone is not synced");
        dev.flush().unwrap();
        assert_eq!(dev.nand().image_syncs(), before + 1);
        dev.begin(1).unwrap();
        dev.write_tx(1, 1, &page).unwrap();
        dev.commit(1).unwrap();
        assert_eq!(dev.nand().image_syncs(), before + 2);
        assert!(dev.transactional());
    }
}
