//! Public block traces: the sample of each format parses to the exact
//! requests, every bad line is named, and the requests land on the right pages.
//!
//! The samples in `tests/data/` are written by hand in each format's real
//! layout (blkparse's with its printf widths and summary block); they are not
//! excerpts of published traces.

use std::fs::File;
use std::io::BufReader;
use std::path::PathBuf;

use txftl_host::blocktrace::blkparse::{self, device_number};
use txftl_host::blocktrace::gen::{generate, GenSpec, Generator};
use txftl_host::blocktrace::{
    page_span, read_requests, read_requests_with, AddressMap, BlockRequest, Devices, Overflow, PageSpan, ParseOptions, ReqKind, TraceError,
    TraceFormat,
};

fn sample(name: &str) -> BufReader<File> {
    let path: PathBuf = [env!("CARGO_MANIFEST_DIR"), "tests", "data", name].iter().collect();
    BufReader::new(File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
}

fn all(format: TraceFormat, name: &str) -> Vec<BlockRequest> {
    read_requests(format, sample(name)).collect::<Result<_, _>>().unwrap()
}

fn req(arrival_ns: u64, device: u32, kind: ReqKind, offset_bytes: u64, len_bytes: u64) -> BlockRequest {
    BlockRequest {
        arrival_ns,
        device,
        kind,
        offset_bytes,
        len_bytes,
    }
}

fn error_lines(format: TraceFormat, text: &str) -> Vec<u64> {
    read_requests(format, text.as_bytes())
        .filter_map(Result::err)
        .map(|e: TraceError| e.line)
        .collect()
}

const SEC: u64 = 512;

#[test]
fn mqsim_sample() {
    let mut reader = read_requests(TraceFormat::Mqsim, sample("mqsim-excerpt.trace"));
    let got: Vec<BlockRequest> = reader.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(
        got,
        vec![
            req(1_000_000, 0, ReqKind::Read, 4096 * SEC, 16 * SEC),
            req(1_000_000, 0, ReqKind::Write, 8192 * SEC, 16 * SEC),
            req(1_296_000, 0, ReqKind::Write, 123_456 * SEC, 32 * SEC),
            req(1_300_000, 0, ReqKind::Read, 7 * SEC, SEC),
            req(1_800_000, 0, ReqKind::Read, 2_000_000 * SEC, 256 * SEC),
        ]
    );
    assert_eq!(reader.stats().zero_length_skipped, 1, "line 5 has 0 sectors");
}

#[test]
fn disksim_sample() {
    assert_eq!(
        all(TraceFormat::Disksim, "disksim-excerpt.trace"),
        vec![
            req(0, 0, ReqKind::Read, 1024 * SEC, 8 * SEC),
            req(512_000, 0, ReqKind::Write, 2048 * SEC, 16 * SEC),
            req(1_250_375, 1, ReqKind::Read, 0, 8 * SEC),
        ]
    );
}

#[test]
fn msr_sample() {
    let tick = 100;
    assert_eq!(
        all(TraceFormat::Msr, "msr-excerpt.csv"),
        vec![
            req(0, 0, ReqKind::Read, 3_154_509_824, 32_768),
            req(28_371 * tick, 0, ReqKind::Write, 1_071_644_672, 4096),
            req(28_371 * tick, 0, ReqKind::Write, 1_071_648_768, 4096),
            req(938_371 * tick, 0, ReqKind::Read, 512, 1536),
            req(6_938_371 * tick, 1, ReqKind::Write, 0, 65_536),
        ]
    );
}

#[test]
fn blkparse_sample_queue_events() {
    let sda = device_number(8, 0).unwrap();
    let sdb = device_number(8, 16).unwrap();
    let mut reader = read_requests(TraceFormat::Blkparse, sample("blkparse-excerpt.txt"));
    let got: Vec<BlockRequest> = reader.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(
        got,
        vec![
            req(0, sda, ReqKind::Write, 2048 * SEC, 8 * SEC),
            req(200_001, sda, ReqKind::Read, 1_000_000 * SEC, 256 * SEC),
            req(1_000_000, sda, ReqKind::Flush, 0, 0),
            req(1_100_000, sda, ReqKind::Write, 4096 * SEC, 8 * SEC),
            req(1_100_000, sda, ReqKind::Flush, 0, 0),
            req(2_000_000, sda, ReqKind::Trim, 8192 * SEC, 2048 * SEC),
            req(2_000_001, sda, ReqKind::Read, 3 * SEC, 4 * SEC),
            req(3_000_000, sdb, ReqKind::Write, 0, 8 * SEC),
        ]
    );
    let stats = reader.stats();
    assert_eq!(stats.errors, 0);
    assert_eq!(stats.requests, 8);
    assert_eq!(stats.no_data_skipped, 0);
    assert_eq!(
        stats.lines,
        stats.lines_skipped + 7,
        "7 Q lines; events of other actions and the summary skipped"
    );
}

#[test]
fn blkparse_sample_issue_events() {
    let sda = device_number(8, 0).unwrap();
    let options = ParseOptions {
        blkparse_events: blkparse::Events::Issue,
    };
    let got: Vec<BlockRequest> = read_requests_with(TraceFormat::Blkparse, sample("blkparse-excerpt.txt"), options)
        .collect::<Result<_, _>>()
        .unwrap();
    let first = 5_690;
    assert_eq!(
        got,
        vec![
            req(0, sda, ReqKind::Write, 2048 * SEC, 8 * SEC),
            req(201_500 - first, sda, ReqKind::Read, 1_000_000 * SEC, 128 * SEC),
            req(201_700 - first, sda, ReqKind::Read, 1_000_128 * SEC, 128 * SEC),
            req(1_000_500 - first, sda, ReqKind::Flush, 0, 0),
        ]
    );
}

#[test]
fn every_bad_line_is_named() {
    let mqsim = "5 0 0 8 0\n6 0 0 8\n7 0 0 8 2\n\n8 0 -4 8 0\n1 0 0 8 0\n";
    assert_eq!(error_lines(TraceFormat::Mqsim, mqsim), vec![2, 3, 5, 6]);
    let disksim = "0.5 0 0 8 1\n0.4 0 0 8 1\n0.6 0 0 8 q\n0.6 0 0 8 1 1\n";
    assert_eq!(error_lines(TraceFormat::Disksim, disksim), vec![2, 3, 4]);
    let msr = "1,h,0,Read,0,512,1\n2,h,0,Erase,0,512,1\n3,h,0,Read,0,512\n0,h,0,Read,0,512,1\n4,h,x,Read,0,512,1\n";
    assert_eq!(error_lines(TraceFormat::Msr, msr), vec![2, 3, 4, 5]);
    let blkparse = "  8,0 0 1 0.000000001 1 Q W 8 + 8 [a]\n  8,0 0 2 0.000000002 1 Q W 8 8 [a]\nCPU0 (8,0):\n  8,0 0 3 x 1 Q W 8 + 8 [a]\n  8,0 0 4 0.0 1 Q W 8 + 8 [a]\n";
    assert_eq!(error_lines(TraceFormat::Blkparse, blkparse), vec![2, 4, 5]);
}

#[test]
fn page_span_boundary_cases() {
    let at = |offset_bytes, len_bytes| page_span(&req(0, 0, ReqKind::Write, offset_bytes, len_bytes), 4096);
    let span = |first_lpn, pages, partial_head, partial_tail| PageSpan {
        first_lpn,
        pages,
        partial_head,
        partial_tail,
    };
    assert_eq!(at(0, 8192), span(0, 2, false, false));
    assert_eq!(at(4096 - 512, 1024), span(0, 2, true, true));
    assert_eq!(at(4096, 4096 - 512), span(1, 1, false, true));
    assert_eq!(at(4096 + 512, 4096 - 512), span(1, 1, true, false));
    assert_eq!(at(12_288, 0), span(3, 0, false, false));
    // The blkparse sample's unaligned read (sectors 3..7) is one page, partial at both ends.
    let unaligned = all(TraceFormat::Blkparse, "blkparse-excerpt.txt")[6];
    assert_eq!(page_span(&unaligned, 4096), span(0, 1, true, true));
    assert_eq!(page_span(&unaligned, 2048), span(0, 2, true, true));
}

#[test]
fn a_trace_past_the_device_is_refused_or_wrapped() {
    // The MQSim sample reaches sector 2,000,256 (about 977 MiB): 64 MiB is too small.
    let pages = 64 * 1024 * 1024 / 4096;
    let mut refuse = AddressMap::new(4096, pages);
    let mut wrap = AddressMap::new(4096, pages).with_overflow(Overflow::Wrap);
    let mut refused = Vec::new();
    for item in read_requests(TraceFormat::Mqsim, sample("mqsim-excerpt.trace")).numbered() {
        let (line, r) = item.unwrap();
        if let Err(e) = refuse.map(line, &r) {
            refused.push(e);
        }
        let m = wrap.map(line, &r).unwrap().unwrap();
        assert!(m.span.first_lpn + m.span.pages <= pages);
        if line == 6 {
            let folded = 2_000_000 * SEC % (pages * 4096);
            assert_eq!(m.req.offset_bytes, folded);
            assert_eq!(m.span.first_lpn, folded / 4096);
        }
    }
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0].line, 6);
    assert!(refused[0].message.contains("needs at least 250032 pages"), "{}", refused[0]);
    assert_eq!(wrap.stats().wrapped, 1);
    assert_eq!(wrap.stats().mapped, 5);
}

#[test]
fn a_second_device_is_refused_unless_chosen() {
    let sda = device_number(8, 0).unwrap();
    let map_all = |mut map: AddressMap| -> Result<u64, TraceError> {
        let mut mapped = 0;
        for item in read_requests(TraceFormat::Blkparse, sample("blkparse-excerpt.txt")).numbered() {
            let (line, r) = item.unwrap();
            mapped += u64::from(map.map(line, &r)?.is_some());
        }
        Ok(mapped)
    };
    let pages = 1 << 18; // 1 GiB of 4 KiB pages
    let err = map_all(AddressMap::new(4096, pages)).unwrap_err();
    assert_eq!(err.line, 17, "the 8,16 line");
    assert_eq!(map_all(AddressMap::new(4096, pages).with_devices(Devices::Only(sda))), Ok(7));
    assert_eq!(map_all(AddressMap::new(4096, pages).with_devices(Devices::Merge)), Ok(8));
}

#[test]
fn generated_traces_are_deterministic_and_parse_back() {
    let spec = GenSpec::tpcc_like(42, 5_000, 32 << 30);
    let mut first = Vec::new();
    let mut again = Vec::new();
    let mut other = Vec::new();
    generate(&mut first, &spec).unwrap();
    generate(&mut again, &spec).unwrap();
    generate(&mut other, &GenSpec { seed: 43, ..spec.clone() }).unwrap();
    assert_eq!(first, again, "same seed, same bytes");
    assert_ne!(first, other, "another seed, another trace");

    let parsed: Vec<BlockRequest> = read_requests(TraceFormat::Mqsim, first.as_slice())
        .collect::<Result<_, _>>()
        .unwrap();
    let generated: Vec<BlockRequest> = Generator::new(&spec).unwrap().collect();
    assert_eq!(parsed, generated, "the text and the iterator agree");
    let writes = parsed.iter().filter(|r| r.kind == ReqKind::Write).count() as f64 / parsed.len() as f64;
    assert!((0.34..0.40).contains(&writes), "about 37% writes: {writes}");
    let mut map = AddressMap::new(4096, (32 << 30) / 4096);
    for (i, r) in parsed.iter().enumerate() {
        map.map(i as u64 + 1, r).unwrap();
    }
}
