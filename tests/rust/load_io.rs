//! How a writable open reads its directory: the listing through the directory lock's own
//! descriptor (`DirLock::list_files`), and reads that leave the files' access times alone.

use std::collections::BTreeSet;
use std::fs::FileTimes;
use std::os::unix::fs::MetadataExt;
use std::time::{Duration, SystemTime};

use kafkalog::log::unified_log::LogOpenOptions;
use kafkalog::util::file::DirLock;
use kafkalog::UnifiedLog;

use crate::common::{append_values, config, Fixture, T0};

/// What `std::fs` lists as regular files.
fn std_listing(dir: &std::path::Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(Result::unwrap)
        .filter(|e| e.file_type().unwrap().is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// Regular files only (no directory, no symbolic link, not `.` or `..`), all of them when the
/// names take several reads of the directory, and the same again on a second listing.
#[test]
fn the_locked_listing_holds_the_regular_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("topic-0");
    std::fs::create_dir(&dir).unwrap();
    for i in 0..1500 {
        std::fs::write(dir.join(format!("{i:020}.log")), b"").unwrap();
    }
    std::fs::create_dir(dir.join("sub")).unwrap();
    std::os::unix::fs::symlink(dir.join("00000000000000000000.log"), dir.join("link")).unwrap();
    let lock = DirLock::try_lock(&dir).unwrap();
    let first: BTreeSet<String> = lock.list_files(&dir).unwrap().into_iter().collect();
    assert_eq!(first.len(), 1500);
    assert_eq!(first, std_listing(&dir));
    std::fs::write(dir.join("partition.metadata"), b"x").unwrap();
    let second: Vec<String> = lock.list_files(&dir).unwrap();
    assert_eq!(second.len(), 1501, "a second listing starts from the beginning again");
    assert_eq!(second.into_iter().collect::<BTreeSet<_>>(), std_listing(&dir));
}

/// A crash recovery reads every `.log` file without setting its access time, although
/// `relatime` would (each access time is older than the modification time).
#[test]
fn a_recovery_leaves_the_access_times_alone() {
    let fx = Fixture::new();
    let cfg = config(&[("internal.segment.bytes", "1024")]);
    let log = fx.open(&cfg);
    for i in 0..40 {
        append_values(&log, T0 + i, &[&format!("value {i:0>60}")]);
    }
    log.close().unwrap();
    let accessed = SystemTime::now() - Duration::from_secs(2 * 86_400);
    let modified = SystemTime::now() - Duration::from_secs(3600);
    let logs: Vec<_> = std::fs::read_dir(&fx.dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    assert!(logs.len() > 3);
    for path in &logs {
        let file = std::fs::File::options().write(true).open(path).unwrap();
        file.set_times(FileTimes::new().set_accessed(accessed).set_modified(modified)).unwrap();
    }
    let before: Vec<_> = logs.iter().map(|p| std::fs::metadata(p).unwrap().atime()).collect();
    let options = LogOpenOptions { recovery_point: Some(0), ..fx.options() };
    let log = UnifiedLog::open(&fx.dir, cfg, options).unwrap();
    assert_eq!(log.load_result().segments_recovered, logs.len());
    let after: Vec<_> = logs.iter().map(|p| std::fs::metadata(p).unwrap().atime()).collect();
    assert_eq!(after, before);
}
