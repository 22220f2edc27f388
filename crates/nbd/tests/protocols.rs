//! Every protocol of the registry behind the export: a write across pages,
//! one across part pages, a flush, a power cut, recovery, and the bytes
//! read back exactly; on every transactional one, `--flush-is-commit`'s
//! group all or nothing across a cut.

mod common;

use common::*;
use txftl_nbd::CutSchedule;

#[test]
fn every_protocol_keeps_flushed_writes_across_a_cut() {
    for entry in txftl_protocols::PROTOCOLS {
        let s = TestServer::start(entry.name);
        let mut c = s.connect(true, false);
        let page = s.page as usize;
        let a = pattern(7, 4 * page);
        c.write(0, &a, false)
            .unwrap_or_else(|e| panic!("{}: write across pages: {e}", entry.name));
        let b = pattern(9, page + 300);
        let at = (6 * page - 100) as u64;
        c.write(at, &b, false)
            .unwrap_or_else(|e| panic!("{}: write across part pages: {e}", entry.name));
        c.flush().unwrap_or_else(|e| panic!("{}: flush: {e}", entry.name));
        s.cut_and_recover();
        let mut c = s.connect(true, false);
        assert_eq!(c.read(0, a.len() as u32).unwrap(), a, "{}: the write across pages", entry.name);
        assert_eq!(
            c.read(at, b.len() as u32).unwrap(),
            b,
            "{}: the write across part pages",
            entry.name
        );
        let st = s.stats();
        let wrapped = st["atomic_writes"].as_u64().unwrap();
        assert_eq!(
            wrapped > 0,
            entry.transactional,
            "{}: writes across pages made transactions: {wrapped}",
            entry.name
        );
    }
    assert_no_server_panic();
}

#[test]
fn every_transactional_protocol_commits_a_group_whole() {
    for entry in txftl_protocols::PROTOCOLS.iter().filter(|e| e.transactional) {
        let s = TestServer::with(entry.name, true, CutSchedule::default());
        let mut c = s.connect(true, false);
        let page = s.page as usize;
        let (old0, old5) = (pattern(1, page), pattern(2, page));
        c.write(0, &old0, false).unwrap();
        c.write(5 * page as u64, &old5, false).unwrap();
        c.flush().unwrap();
        c.write(0, &pattern(3, page), false).unwrap();
        c.write(5 * page as u64, &pattern(4, page), false).unwrap();
        // No flush: the group is open when power goes.
        s.cut_and_recover();
        let mut c = s.connect(true, false);
        assert_eq!(c.read(0, page as u32).unwrap(), old0, "{}: page 0 of the group lost", entry.name);
        assert_eq!(
            c.read(5 * page as u64, page as u32).unwrap(),
            old5,
            "{}: page 5 of the group lost",
            entry.name
        );
        assert_eq!(s.stats()["groups_committed"], 1, "{}", entry.name);
    }
    assert_no_server_panic();
}
