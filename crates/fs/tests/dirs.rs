//! Directories (paths, mkdir, rmdir, list_dir) and ten thousand files.

mod common;

use common::*;
use txftl_fs::{FileClass, FormatOptions, Fs, FsError, FsMode, ROOT};

fn names(fs: &Fs, path: &str) -> Vec<(String, bool)> {
    fs.list_dir(path).unwrap().into_iter().map(|e| (e.name, e.is_dir)).collect()
}

#[test]
fn directories_nest_list_and_refuse_to_remove_when_not_empty() {
    for (protocol, mode) in MODES {
        let mut fs = Fs::format(small_device(protocol), mode).unwrap();
        let ps = fs.page_size();
        assert_eq!(fs.resolve("/").unwrap(), ROOT);
        assert!(fs.list_dir("").unwrap().is_empty());
        // A file needs its directory.
        assert!(matches!(fs.create("dir/x.db", FileClass::Database), Err(FsError::NotFound(p)) if p == "dir"));
        let dir = fs.mkdir("dir").unwrap();
        assert!(matches!(fs.mkdir("dir"), Err(FsError::Exists(_))));
        fs.mkdir("dir/sub").unwrap();
        let x = fs.create("dir/x.db", FileClass::Database).unwrap();
        assert_eq!(
            fs.create("/dir/x.db", FileClass::Database).unwrap(),
            x,
            "a leading / names the root"
        );
        fs.write(None, x, 0, &page_bytes(ps, 1, 0)).unwrap();
        fs.fsync(None, x).unwrap();
        let y = fs.create("dir/sub/y.db-journal", FileClass::Journal).unwrap();
        fs.write(None, y, 0, &page_bytes(100, 2, 0)).unwrap();
        fs.fsync(None, y).unwrap();
        fs.create("top", FileClass::Other).unwrap();
        // The same name in two directories is two files.
        let x2 = fs.create("dir/sub/x.db", FileClass::Database).unwrap();
        assert_ne!(x, x2);

        assert_eq!(names(&fs, "/"), [("dir".to_string(), true), ("top".to_string(), false)]);
        assert_eq!(
            names(&fs, "dir"),
            [("sub".to_string(), true), ("x.db".to_string(), false)],
            "{protocol}: by name"
        );
        let sub = fs.list_dir("dir/sub").unwrap();
        assert_eq!(sub.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(), ["x.db", "y.db-journal"]);
        assert_eq!(sub[1].size, 100);
        assert_eq!(fs.path_of(y).unwrap(), "dir/sub/y.db-journal");

        // Typed refusals.
        assert!(matches!(fs.rmdir("dir"), Err(FsError::NotEmpty(_))));
        assert!(matches!(fs.rmdir("top"), Err(FsError::NotADirectory(_))));
        assert!(matches!(fs.rmdir("dir/nope"), Err(FsError::NotFound(_))));
        assert!(matches!(fs.delete("dir/sub"), Err(FsError::IsADirectory(_))));
        assert!(matches!(fs.create("dir/sub", FileClass::Other), Err(FsError::IsADirectory(_))));
        assert!(matches!(fs.create("top/z", FileClass::Other), Err(FsError::NotADirectory(p)) if p == "top"));
        assert!(matches!(fs.list_dir("top"), Err(FsError::NotADirectory(_))));
        assert!(matches!(fs.create("dir//z", FileClass::Other), Err(FsError::InvalidName(_))));
        assert!(matches!(fs.create("dir/..", FileClass::Other), Err(FsError::InvalidName(_))));
        assert!(matches!(
            fs.create(&format!("dir/{}", "n".repeat(61)), FileClass::Other),
            Err(FsError::NameTooLong(_))
        ));
        fs.create(&format!("dir/{}", "n".repeat(60)), FileClass::Other).unwrap();
        assert!(matches!(fs.read(None, dir, 0, &mut [0u8; 4]), Err(FsError::IsADirectory(_))));

        // Namespace changes are durable when they return.
        let mut fs = cut_and_mount(fs, protocol, mode);
        fs.check().unwrap();
        assert_eq!(names(&fs, "dir").len(), 3, "{protocol}");
        let x = fs.lookup("dir/x.db").unwrap();
        assert_eq!(read_all(&mut fs, None, x), page_bytes(ps, 1, 0));
        let y = fs.lookup("dir/sub/y.db-journal").unwrap();
        assert_eq!(read_all(&mut fs, None, y), page_bytes(100, 2, 0));
        assert_eq!(fs.class(y).unwrap(), FileClass::Journal);
        let mut files: Vec<String> = fs.list().into_iter().map(|(p, _)| p).collect();
        files.sort();
        assert_eq!(files.len(), 5);
        assert_eq!(files[0], "dir/nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn");

        // Emptied, the directories go.
        fs.delete("dir/sub/y.db-journal").unwrap();
        fs.delete("dir/sub/x.db").unwrap();
        fs.rmdir("dir/sub").unwrap();
        assert!(matches!(fs.rmdir("dir"), Err(FsError::NotEmpty(_))));
        fs.delete("dir/x.db").unwrap();
        fs.delete(&format!("dir/{}", "n".repeat(60))).unwrap();
        fs.rmdir("/dir/").unwrap_err(); // a trailing `/` is an empty component
        fs.rmdir("/dir").unwrap();
        let fs = cut_and_mount(fs, protocol, mode);
        assert_eq!(names(&fs, ""), [("top".to_string(), false)], "{protocol}");
        let report = fs.check().unwrap();
        assert_eq!((report.files, report.directories, report.data_pages), (1, 1, 0), "{protocol}");
    }
}

/// Ten thousand files in a hundred directories: created, looked up, some
/// written, deleted, with the name index and the free-inode set (no scan of
/// the inode table per operation). A speed check without a timed assertion:
/// it runs in about a second.
#[test]
fn ten_thousand_files_are_created_looked_up_and_deleted() {
    for (protocol, mode) in MODES {
        let opts = FormatOptions { inode_count: Some(10_240) };
        let mut fs = Fs::format_with(device_on(protocol, nand(64, 64, 4096)), mode, opts).unwrap();
        let ps = fs.page_size();
        let files = 10_000u32;
        for d in 0..100 {
            fs.mkdir(&format!("d{d:02}")).unwrap();
        }
        let path = |i: u32| format!("d{:02}/file-{i:05}", i % 100);
        for i in 0..files {
            let ino = fs.create(&path(i), FileClass::Other).unwrap();
            if i % 100 == 0 {
                fs.write(None, ino, 0, &page_bytes(ps, i, 0)).unwrap();
                fs.fsync(None, ino).unwrap();
            }
        }
        assert!(
            fs.mkdir("full-1").is_ok() && fs.create("x", FileClass::Other).is_ok(),
            "{protocol}: 10,240 inodes hold 10,000 files, 100 directories and a few more"
        );
        for i in (0..files).rev() {
            let ino = fs.lookup(&path(i)).unwrap_or_else(|| panic!("{protocol}: {}", path(i)));
            assert_eq!(fs.path_of(ino).unwrap(), path(i));
        }
        let mut fs = cut_and_mount(fs, protocol, mode);
        let report = fs.check().unwrap();
        assert_eq!((report.files, report.directories), (files + 1, 100 + 2), "{protocol}");
        assert_eq!(fs.list_dir("d42").unwrap().len(), 100);
        for i in (0..files).step_by(100) {
            let ino = fs.lookup(&path(i)).unwrap();
            assert_eq!(read_all(&mut fs, None, ino), page_bytes(ps, i, 0), "{protocol}: {}", path(i));
        }
        for i in 0..files {
            fs.delete(&path(i)).unwrap();
        }
        for d in 0..100 {
            fs.rmdir(&format!("d{d:02}")).unwrap();
        }
        let fs = cut_and_mount(fs, protocol, mode);
        let report = fs.check().unwrap();
        assert_eq!((report.files, report.directories, report.data_pages), (1, 2, 0), "{protocol}");
    }
}

#[test]
fn a_full_inode_table_is_a_typed_error() {
    let opts = FormatOptions { inode_count: Some(8) };
    let mut fs = Fs::format_with(small_device("plain"), FsMode::Journaled, opts).unwrap();
    let count = fs.layout().inode_count;
    for i in 1..count {
        fs.create(&format!("f{i}"), FileClass::Other).unwrap();
    }
    assert!(matches!(fs.create("one-more", FileClass::Other), Err(FsError::NoInodes { count: c }) if c == count));
    fs.delete("f1").unwrap();
    fs.create("one-more", FileClass::Other).unwrap();
}
