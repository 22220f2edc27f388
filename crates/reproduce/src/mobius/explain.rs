//! The notes of the checks that differ, each from this run's measurements,
//! and the deviations of `reproduce mobius`.

use super::checks::latency;
use super::{Figures, Interface, Params, Pattern};
use crate::{Check, Class};

/// The class of a miss of check `id`, and why that class: each the cause
/// the measurements in its note show (`None`: a miss no cause is known
/// for, which the summary counts as unclassified and the tests refuse).
fn class_of(id: &str) -> Option<(Class, &'static str)> {
    Some(match id {
        _ if id.starts_with("fig7.random.") && id.ends_with("_vs_dwrite") => (
            Class::Setup,
            "The paper gives no size of DFTL's cache (CMT), and a miss here is its write-backs: DFTL's misses read \
             translation pages and each write waits for the changed page it evicts (the note's sweep of the cache \
             size shows the check move).",
        ),
        "fig7.sequential_faster" => (
            Class::Setup,
            "The paper does not say what the device held before Fig. 7's runs; ours starts empty, so Möbius's \
             translation misses read nothing and its sequential and random writes tie at the sizes without a merge.",
        ),
        _ if id.ends_with("sswrite_vs_dftl_aio") || id == "fig9.tpcc.sswrite_vs_aw" => (
            Class::Host,
            "The paper measured a real host (libaio's system calls, libATA commands, MySQL's CPU time in DBT-2); \
             ours is device time only.",
        ),
        _ if id.ends_with(".aw_vs_sswrite") || id == "fig9.aswrite_vs_aw" => (
            Class::Setup,
            "Atomic-Write is the paper's own implementation, whose commit path it does not describe (sec. II-C: \
             \"only adds an one-bit flag\"; sec. V-B: \"write mapping information once a transaction is \
             committed\"); ours writes back its changed table pages at each commit.",
        ),
        "fig10.mobius_le_lighttx" | "fig10.mobius_not_enlarged" => (
            Class::Model,
            "Ours writes one inode per transaction, where sec. IV-E merges static transactions of fewer than 10 \
             pages into one.",
        ),
        "fig11.mobius_vs_lighttx" => (
            Class::Setup,
            "The Möbius paper does not say how its LightTx reads its zone: with the summary pages of LightTx's own \
             paper (sec. IV-D), ours, the ratio is below the paper's; reading every page's spare area (the variant \
             row) it is above (the note gives both).",
        ),
        "fig11.order" => (
            Class::Setup,
            "Our DFTL scans the whole device as the paper's must (sec. III-F: \"Whole SSD scanning is needed\"), but \
             the paper does not say what its SSD held before the writes: ours starts empty (the format), so the \
             whole-device scan reads only the blocks the writes filled, about what LightTx's zone scan reads.",
        ),
        _ => return None,
    })
}

/// The largest size run, and the latencies of two interfaces there.
fn at_largest(params: &Params, f: &Figures, pattern: Pattern, a: Interface, b: Interface) -> (u32, f64, f64) {
    let n = params.sizes.iter().copied().max().unwrap_or(0);
    (n, latency(f, a, pattern, n), latency(f, b, pattern, n))
}

fn programs_per_page(f: &Figures, i: Interface, pattern: Pattern, n: u32) -> f64 {
    f.point(i.key(), pattern.key(), n).map_or(f64::NAN, |p| p.programs_per_page)
}

fn map_reads_per_page(f: &Figures, i: Interface, pattern: Pattern, n: u32) -> f64 {
    f.point(i.key(), pattern.key(), n).map_or(f64::NAN, |p| p.map_reads_per_page)
}

/// How `d` against DWRITE moves with DFTL's cache size (random only: the
/// sweep runs random writes).
fn cmt_sweep_note(params: &Params, f: &Figures, pattern: Pattern, d: Interface) -> String {
    if pattern != Pattern::Random || f.cmt_sweep.is_empty() {
        return String::new();
    }
    let n = params.sizes.iter().copied().max().unwrap_or(0);
    let rows: Vec<String> = f
        .cmt_sweep
        .iter()
        .map(|r| {
            let at = Figures {
                compound: r.points.clone(),
                ..Figures::default()
            };
            let (k, all) = super::checks::below_count(params, &at, pattern, d, &[Interface::Dwrite]);
            format!(
                "{} of the table ({} pages): below at {k} of {all} sizes, at {n} pages {:.0} us against {:.0} us, {:.2} \
                 translation reads per page",
                r.share,
                r.cmt_pages,
                super::checks::latency(&at, d, pattern, n),
                super::checks::latency(&at, Interface::Dwrite, pattern, n),
                map_reads_per_page(&at, d, pattern, n)
            )
        })
        .collect();
    format!(" Over DFTL's cache size (setup; Möbius caches as many): {}.", rows.join("; "))
}

/// The note of one check that differs.
fn note(params: &Params, f: &Figures, c: &Check) -> String {
    use Interface::*;
    let pattern = if c.id.contains(".sequential.") {
        Pattern::Sequential
    } else {
        Pattern::Random
    };
    let pair = |a: Interface, b: Interface| {
        let (n, la, lb) = at_largest(params, f, pattern, a, b);
        let ck = |i: Interface| f.point(i.key(), pattern.key(), n).map_or(0, |p| p.checkpoints);
        format!(
            "at {n} pages ({}): {} {la:.0} us, {} {lb:.0} us, {:.2} and {:.2} programs per page written, {} and {} \
             checkpoints over the point's compound writes",
            pattern.key(),
            a.label(),
            b.label(),
            programs_per_page(f, a, pattern, n),
            programs_per_page(f, b, pattern, n),
            ck(a),
            ck(b)
        )
    };
    if c.id.ends_with("sswrite_vs_dftl_aio") {
        return format!(
            "{}. An S-SWRITE programs its inode first, then the same pages as DFTL, and returns once all are on flash; \
             a DFTL write returns once its data crossed the channel into the device. The paper credits S-SWRITE's lead \
             to libaio's system calls, a host CPU cost the emulator does not model.",
            pair(SSwrite, DftlAio)
        );
    }
    if c.id.ends_with("_vs_dwrite") {
        let d = if c.id.contains("dftl_aio") { DftlAio } else { DftlSingle };
        let n = params.sizes.iter().copied().max().unwrap_or(0);
        return format!(
            "{}; DFTL reads {:.2} translation pages per page written. DFTL writes a changed translation page back \
             when it leaves the cache ({} pages cached of the table's), which the next write waits for; Möbius keeps \
             the changed entries in its Resident Area until a merge, none of which falls in these runs, and writes a \
             head record and an inode per DWRITE instead.",
            pair(d, Dwrite),
            map_reads_per_page(f, d, pattern, n),
            params.cmt_pages
        ) + &cmt_sweep_note(params, f, pattern, d);
    }
    if c.id.ends_with("dftl_aio_vs_single") {
        return format!(
            "{}. A plain write returns once its data crossed the channel, so one at a time the next is submitted while \
             the dies still program: the dies overlap either way, and only the channel transfers queue differently.",
            pair(DftlAio, DftlSingle)
        );
    }
    if c.id.ends_with("aswrite_best") || c.id.contains("fig8.") {
        return format!("{}; {}.", pair(ASwrite, DftlSingle), pair(ASwrite, DftlAio));
    }
    if c.id.ends_with(".aw_vs_sswrite") {
        return filebench_note(f, c.id.split('.').nth(1).unwrap_or(""));
    }
    if c.id.starts_with("fig9.") {
        return fig9_note(f);
    }
    if c.id.starts_with("fig10.") {
        return fig10_note(f);
    }
    if c.id.starts_with("fig11.") {
        return fig11_note(params, f);
    }
    if c.id == "fig7.sequential_faster" {
        let n = params.sizes.iter().copied().max().unwrap_or(0);
        let rows: Vec<String> = Interface::ALL
            .iter()
            .map(|&i| {
                format!(
                    "{} {:.0} / {:.0} us ({:.2} / {:.2} translation reads per page)",
                    i.label(),
                    latency(f, i, Pattern::Random, n),
                    latency(f, i, Pattern::Sequential, n),
                    map_reads_per_page(f, i, Pattern::Random, n),
                    map_reads_per_page(f, i, Pattern::Sequential, n)
                )
            })
            .collect();
        return format!(
            "random / sequential at {n} pages: {}. Möbius's writes read no translation page in either pattern: the \
             device starts empty and its Resident Area keeps every changed entry, so no translation page is ever \
             written before these runs end, and a miss on a page never written reads nothing; DFTL's write-backs \
             make its random misses read.",
            rows.join("; ")
        );
    }
    String::new()
}

pub fn explain(params: &Params, f: &Figures, checks: &mut [Check]) -> Vec<String> {
    for c in checks.iter_mut().filter(|c| c.differs()) {
        let note = note(params, f, c);
        c.explain(class_of(&c.id), &note);
    }
    vec![
        "Fig. 9's Filebench personalities run on our file system, one device transaction per fsync, with one \
         thread for a count of loops instead of Filebench's 50 and 100 threads for 60 s; each file written is \
         fsynced before it is closed (Filebench's personalities do not fsync; ext3 commits its journal every 5 s)."
            .into(),
        "Latency is to the acknowledgement, on the device clock: a plain write (DFTL) returns once its data crossed \
         the channel into the device's buffer, an S-SWRITE and a DWRITE's REAR once every page is on flash, an \
         A-SWRITE once its inode is."
            .into(),
        "No host software or host link is timed: the paper's system calls and libaio's costs are not modelled \
         (libaio is all the pages submitted at one device instant), nor the transfer of the pages from the host: an \
         A-SWRITE returns when its inode is on flash whatever its size, so its bandwidth exceeds the flash's."
            .into(),
        "Checkpoints run in the foreground: DFTL's directory persistence and Möbius's merges (and the framework's \
         checkpoint interval) are waited for by the write that triggers them, where the paper's merge \"won't block \
         FTL read and write\"; the Fig. 8 table counts them per point."
            .into(),
        "DWRITE's REAR returns after the transaction's inode (written once every page of the chain is on flash), \
         not at the closing of the cycle: the framework's log appends are synchronous (docs/protocols/mobius.md)."
            .into(),
        format!(
            "DFTL and Möbius cache {} translation pages each (an eighth of the table; the paper gives no CMT size).",
            params.cmt_pages
        ),
    ]
}

/// One workload's runs, described for a note.
fn fig9_parts(runs: &[super::results::TpsRun]) -> String {
    let parts: Vec<String> = super::tpcc::FIG9
        .iter()
        .filter_map(|&(k, _, _, name)| {
            runs.iter().find(|x| x.key == k).map(|x| {
                format!(
                    "{name} {:.1} transactions per simulated s (commit {:.0} us; {} flash programs for {} host \
                     writes: {} GC copies, {} checkpoint pages, {} protocol pages)",
                    x.tps, x.commit_mean_us, x.flash_programs, x.host_writes, x.gc_copies, x.map_writes, x.protocol_meta_writes
                )
            })
        })
        .collect();
    parts.join("; ")
}

fn fig9_note(f: &Figures) -> String {
    let parts: Vec<String> = super::checks::fig9_workloads(f)
        .into_iter()
        .map(|(w, runs)| format!("{w}: {}", fig9_parts(runs)))
        .collect();
    format!(
        "{}. An A-SWRITE commit returns at its inode, but the device's next write waits until its pages are done \
         (so no later inode flags it early), and the replays' strict isolation waits for every operation before the \
         next transaction: the time saved is the wait between a commit and its client's next read. Atomic-Write \
         writes back every mapping-table page its transaction changed at each commit, and waits for them.",
        parts.join(". ")
    )
}

/// Why Atomic-Write is not above S-SWRITE on a Filebench personality.
fn filebench_note(f: &Figures, personality: &str) -> String {
    let Some(b) = f.filebench(personality) else { return String::new() };
    let w = &b.workload;
    let per_commit = |k: &str| {
        b.run(k).map_or(f64::NAN, |x| {
            (x.map_writes + x.protocol_meta_writes) as f64 / x.commits.max(1) as f64
        })
    };
    let commit = |k: &str| b.run(k).map_or(f64::NAN, |x| x.commit_mean_us);
    format!(
        "{personality}: {} device transactions of {:.1} pages on average. {}. Per commit, Atomic-Write programs \
         {:.2} pages of its own (the mapping-table pages it writes back at every commit) and S-SWRITE {:.2} (its \
         inode, flags-only inodes at the file system's flushes, translation pages at merges). An Atomic-Write \
         commit waits for three program times in a row (its pages, then its flag page, which must land last, then \
         its table pages), an S-SWRITE for two (its inode, then its pages); but a buffered S-SWRITE sends all its \
         pages at the commit, so the GC they set off falls in its commit, where Atomic-Write's pages go out at each \
         write: commit {:.0} against {:.0} us. The devices start full (every logical page written once), so GC's \
         copies weigh on every run alike. The paper's Atomic-Write is its own implementation, whose commit path \
         it does not describe.",
        w.device_transactions,
        w.tx_pages_mean,
        fig9_parts(&b.runs),
        per_commit("atomic-write"),
        per_commit("s-swrite"),
        commit("atomic-write"),
        commit("s-swrite"),
    )
}

fn fig10_note(f: &Figures) -> String {
    let parts: Vec<String> = super::tpcc::PROTOCOLS
        .iter()
        .filter_map(|&(p, name)| {
            f.wa_run(p).map(|x| {
                format!(
                    "{name} {:.3} ({} flash programs, {} host writes with {} of the host journal's, {} GC copies, {} \
                     checkpoint pages, {} protocol pages)",
                    x.write_amplification,
                    x.flash_programs,
                    x.host_writes,
                    x.journal_writes,
                    x.gc_copies,
                    x.map_writes,
                    x.protocol_meta_writes,
                )
            })
        })
        .collect();
    format!(
        "{}. Möbius writes an inode per transaction and its translation pages at merges only; LightTx writes \
         nothing per commit; Atomic-Write writes its table pages at commits; DFTL's host journal writes every \
         page twice, and the write-backs of its cache add translation pages. Each ratio is flash programs per \
         page the trace writes.",
        parts.join("; ")
    )
}

fn fig11_note(params: &Params, f: &Figures) -> String {
    let z = super::checks::fig11_zone(params);
    let parts: Vec<String> = super::recovery::PROTOCOLS
        .iter()
        .filter_map(|&(p, name)| {
            f.recovered(p, z).map(|x| {
                format!(
                    "{name} {:.1} ms (load {:.1}, log and zone scan {:.1}, roll-forward {:.1}, seal {:.1}, ring erase \
                     counts and other {:.1}; {} pages read; {} checkpoints during the writes)",
                    x.recovery_ms, x.load_ms, x.log_ms, x.scan_ms, x.seal_ms, x.other_ms, x.pages_read, x.checkpoints_before
                )
            })
        })
        .collect();
    format!(
        "after {z} MiB: {}. LightTx reads each block its zone filled by its first page and its summary page and \
         an open block page by page (the variant without summary pages: every page's spare area); Möbius reads \
         its active ALA (at \
         most one merge interval of inodes, whatever was written before) and probes its allocation window; \
         DFTL reads every page of every block in use (the whole-device scan, `scan-recovery=1`), on a device \
         that held nothing before these writes; the variant rolls forward only the blocks written since its \
         last checkpoint, which its cache's write-backs bring closer (a checkpoint whenever the ring's room for \
         them runs out).",
        parts.join("; ")
    )
}
