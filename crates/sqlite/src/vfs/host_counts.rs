//! The host's work a VFS counts (`host_cost.rs` prices it): the calls a
//! kernel VFS makes a system call for and the bytes they copy, and the
//! statements the connections' trace hooks report. Kept here, with the VFS,
//! so the loadable extension (which builds the VFS alone) counts too.

use std::sync::atomic::{AtomicU64, Ordering};

/// Shared by a VFS and every connection counted through it.
#[derive(Debug, Default)]
pub struct HostCounters {
    statements: AtomicU64,
    vm_steps: AtomicU64,
    syscalls: AtomicU64,
    bytes: AtomicU64,
}

impl HostCounters {
    /// One VFS call a kernel VFS makes a system call for, copying `bytes`.
    pub fn syscall(&self, bytes: u64) {
        self.syscalls.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// One SQLite statement run, with its virtual-machine operations.
    pub fn statement(&self, vm_steps: u64) {
        self.statements.fetch_add(1, Ordering::Relaxed);
        self.vm_steps.fetch_add(vm_steps, Ordering::Relaxed);
    }

    /// (statements, VM operations, system calls, bytes copied) so far.
    pub fn counts(&self) -> [u64; 4] {
        [&self.statements, &self.vm_steps, &self.syscalls, &self.bytes].map(|c| c.load(Ordering::Relaxed))
    }
}
