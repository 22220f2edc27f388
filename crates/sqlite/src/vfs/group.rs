//! Grouped device commits (a module of the VFS, `vfs/`): under `synchronous=NORMAL`, on a protocol whose
//! registry entry asks for it (`ProtocolEntry::sql_normal_group_pages`:
//! NoLgn, whose paper, §4.1, "manually control[s] the frequency of commit"
//! at one every 1,000 data pages, NoLgn having no WAL to sync), SQLite's
//! transactions with `journal_mode=OFF` go to the device grouped: the
//! device transaction stays open across SQLite's commit points until it
//! holds that many database page writes, then commits at the next one.
//!
//! What a power cut then promises is a prefix of SQLite's commits (the
//! open group is lost whole), as SQLite's WAL promises under NORMAL. A
//! connection's group is its own device transaction: another connection
//! sees its pages once the group commits. A clean close commits the group.
//!
//! A ROLLBACK between two commit points aborts the device transaction. With
//! nothing written since the last commit point (SQLite wrote nothing before
//! its commit: the stack turns `cache_spill` off for grouped modes) the group
//! stays open and nothing is lost; after a cache spill the group's earlier
//! commits go with it, reported in SQLite's error log.

/// One database handle's group.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Group {
    /// Database page writes per device transaction (0: no grouping).
    pages: u32,
    /// Database page writes in the open device transaction.
    written: u32,
    /// Writes since the last commit point (they are not SQLite's committed state).
    dirty: bool,
    /// The device transaction holds SQLite commits not yet on the device.
    held: bool,
    /// The journal mode left OFF: no grouping until it is OFF again,
    /// whatever `synchronous` is set to meanwhile.
    stopped: bool,
    /// `synchronous` is NORMAL, and the group size it asks for.
    normal_pages: u32,
}

/// What the handle does with its device transaction when SQLite drops its lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AtUnlock {
    /// Nothing open, or a group with nothing since its last commit point: keep it.
    Keep,
    /// A ROLLBACK: abort (`lost_commits`: the group's earlier commits go too).
    Abort { lost_commits: bool },
}

impl Group {
    /// `PRAGMA synchronous=value` was set; `entry_pages`: the protocol's group
    /// size (0: none).
    pub fn set_synchronous(&mut self, value: &str, entry_pages: u32) {
        let normal = value.eq_ignore_ascii_case("normal") || value == "1";
        self.normal_pages = if normal { entry_pages } else { 0 };
        self.pages = if self.stopped { 0 } else { self.normal_pages };
    }

    /// No more grouping on this handle (the journal mode left OFF): the
    /// open group commits at the next commit point, or at close.
    pub fn stop(&mut self) {
        self.stopped = true;
        self.pages = 0;
    }

    /// The journal mode is OFF again: grouping as `synchronous` asks.
    pub fn resume(&mut self) {
        self.stopped = false;
        self.pages = self.normal_pages;
    }

    /// Are SQLite's transactions grouped now (a device transaction spans
    /// its commit points until it holds enough pages)?
    pub fn grouping(&self) -> bool {
        self.pages > 0
    }

    /// A database page write (or truncate) inside the device transaction.
    pub fn wrote(&mut self) {
        self.written += 1;
        self.dirty = true;
    }

    /// SQLite's commit point: true to commit the device transaction now.
    pub fn commit_now(&mut self) -> bool {
        self.dirty = false;
        if self.pages > 0 && self.written < self.pages {
            self.held = true;
            return false;
        }
        true
    }

    /// The device transaction committed or aborted.
    pub fn closed(&mut self) {
        self.written = 0;
        self.dirty = false;
        self.held = false;
    }

    pub fn at_unlock(&self, open: bool) -> AtUnlock {
        match (open, self.held, self.dirty) {
            (false, _, _) | (true, true, false) => AtUnlock::Keep,
            (true, held, _) => AtUnlock::Abort { lost_commits: held },
        }
    }

    /// At close: commit the group (SQLite's commits it holds) rather than abort.
    pub fn commit_at_close(&self) -> bool {
        self.held && !self.dirty
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_commits_once_it_holds_its_pages_and_survives_commit_points_until_then() {
        let mut g = Group::default();
        g.set_synchronous("NORMAL", 3);
        g.wrote();
        g.wrote();
        assert!(!g.commit_now(), "2 pages of 3: held");
        assert_eq!(g.at_unlock(true), AtUnlock::Keep);
        assert!(g.commit_at_close());
        g.wrote();
        assert_eq!(
            g.at_unlock(true),
            AtUnlock::Abort { lost_commits: true },
            "a rollback after a spill"
        );
        assert!(g.commit_now(), "3 pages: commit");
        g.closed();
        assert_eq!(g.at_unlock(false), AtUnlock::Keep);
        g.set_synchronous("full", 3);
        g.wrote();
        assert!(g.commit_now(), "FULL: every commit point commits");
    }

    #[test]
    fn a_journal_mode_other_than_off_stops_grouping_until_off_again() {
        let mut g = Group::default();
        g.set_synchronous("normal", 3);
        g.stop();
        g.set_synchronous("normal", 3);
        assert!(!g.grouping(), "NORMAL set again under another journal mode");
        g.resume();
        assert!(g.grouping());
    }
}
