//! The reference model of the block-device crash contract (`plain`):
//! after a power cut and recovery, each logical page holds either the value it
//! had when the last flush returned, or a value written (or trimmed) after that
//! flush began; never a torn page, never a value older than the last flush.
//! While the device is up, a read returns the latest write.

use std::collections::BTreeMap;

/// A page's value in the model: the version of the write that produced it, or
/// `None` for never written / trimmed.
pub type Value = Option<u64>;

#[derive(Clone, Debug)]
pub struct BlockModel {
    durable: Vec<Value>,
    latest: Vec<Value>,
    /// Values written or trimmed since the last completed flush, per page,
    /// including an operation that was in flight at the cut.
    since_flush: BTreeMap<u32, Vec<Value>>,
}

impl BlockModel {
    pub fn new(logical_pages: u32) -> BlockModel {
        BlockModel {
            durable: vec![None; logical_pages as usize],
            latest: vec![None; logical_pages as usize],
            since_flush: BTreeMap::new(),
        }
    }

    /// A write or trim that may have reached the device (acknowledged or in flight).
    pub fn candidate(&mut self, lpn: u32, value: Value) {
        self.since_flush.entry(lpn).or_default().push(value);
    }

    /// A write or trim that returned.
    pub fn acknowledged(&mut self, lpn: u32, value: Value) {
        self.candidate(lpn, value);
        self.latest[lpn as usize] = value;
    }

    /// A flush returned: everything acknowledged before it is durable.
    pub fn flushed(&mut self) {
        for (lpn, _) in std::mem::take(&mut self.since_flush) {
            self.durable[lpn as usize] = self.latest[lpn as usize];
        }
    }

    pub fn latest(&self, lpn: u32) -> Value {
        self.latest[lpn as usize]
    }

    /// Values a page may hold after a cut.
    pub fn allowed(&self, lpn: u32) -> Vec<Value> {
        let mut v = vec![self.durable[lpn as usize]];
        if let Some(more) = self.since_flush.get(&lpn) {
            v.extend(more.iter().copied());
        }
        v
    }

    /// After recovery the device's state becomes the new baseline.
    pub fn reset_to(&mut self, state: &[Value]) {
        self.durable = state.to_vec();
        self.latest = state.to_vec();
        self.since_flush.clear();
    }
}
