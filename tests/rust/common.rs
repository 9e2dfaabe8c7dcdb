//! The integration tests' kit: building batches, decoding what a read returns, opening logs and
//! log managers with a manual clock, file names, and listing a directory; the cleaner tests'
//! helpers are in [`cleaner`]. A helper two test files need lives here, under one name.

pub mod cleaner;
pub mod cleaner_manager;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use kafkalog::log::unified_log::{FetchIsolation, LogOpenOptions, UnifiedLog};
use kafkalog::record::records::BatchIter;
use kafkalog::record::{BatchBuilder, BatchHeader, CompressionType};
use kafkalog::util::clock::{ManualClock, SharedClock};
use kafkalog::{LogConfig, LogManagerConfig};

/// A wall-clock time for tests (2023-11-14), so timestamps near "now" pass the 1-hour
/// `message.timestamp.after.max.ms` default.
pub const T0: i64 = 1_700_000_000_000;

/// proptest's configuration for the property tests (`fuzz.rs`, `model.rs`): a fixed RNG seed
/// (proptest's own default draws one from the OS on every run), so every run tries the same
/// cases and a failure seen once is seen every time. `PROPTEST_RNG_SEED=<u64>` (another set of
/// cases) and `PROPTEST_CASES` (how many) still override it: `proptest!` applies them last.
pub fn proptest_config() -> proptest::test_runner::Config {
    proptest::test_runner::Config {
        rng_seed: proptest::test_runner::RngSeed::Fixed(PROPTEST_SEED),
        ..proptest::test_runner::Config::default()
    }
}

/// The seed of [`proptest_config`] ("kafkalog" in ASCII), the same as the unit tests'.
const PROPTEST_SEED: u64 = 0x6b61_666b_616c_6f67;

/// A decoded record, owning its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rec {
    pub offset: i64,
    pub timestamp: i64,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
}

impl Rec {
    /// Copies a decoded record.
    pub fn of(r: &kafkalog::record::Record<'_>) -> Self {
        Rec {
            offset: r.offset,
            timestamp: r.timestamp,
            key: r.key.map(<[u8]>::to_vec),
            value: r.value.map(<[u8]>::to_vec),
        }
    }
}

/// A batch's offsets and size as found in a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchInfo {
    pub base_offset: i64,
    pub last_offset: i64,
    pub size: usize,
    pub max_timestamp: i64,
}

/// One record to build: key, value, timestamp.
pub type RecSpec<'a> = (Option<&'a [u8]>, Option<&'a [u8]>, i64);

/// A v2 batch at `base` holding `records` at consecutive offsets, compressed with `codec`.
pub fn batch(base: i64, codec: CompressionType, records: &[RecSpec<'_>]) -> Vec<u8> {
    let mut b = BatchBuilder::new(BatchHeader { base_offset: base, compression: codec, ..BatchHeader::default() });
    for (k, v, ts) in records {
        b.append_next(*ts, *k, *v, &[]).expect("append to builder");
    }
    b.build().expect("build batch")
}

/// An uncompressed batch at `base` with one keyed record per value, all at `timestamp`.
pub fn values_batch(base: i64, timestamp: i64, values: &[&str]) -> Vec<u8> {
    let specs: Vec<RecSpec<'_>> = values.iter().map(|v| (Some(&b"k"[..]), Some(v.as_bytes()), timestamp)).collect();
    batch(base, CompressionType::None, &specs)
}

/// Every record of the complete batches in `bytes`, checking each CRC.
pub fn decode(bytes: &[u8]) -> Vec<Rec> {
    let mut out = Vec::new();
    let mut scratch = Vec::new();
    let mut iter = BatchIter::new(bytes);
    for item in iter.by_ref() {
        let (_, b) = item.expect("batch framing");
        b.ensure_valid().expect("batch crc");
        b.for_each_record(&mut scratch, |r| {
            out.push(Rec::of(&r));
            Ok(())
        })
        .expect("records decode");
    }
    assert_eq!(iter.position(), bytes.len(), "the bytes end in a partial batch");
    out
}

/// The batches in `bytes` (offsets, size, max timestamp).
pub fn batches(bytes: &[u8]) -> Vec<BatchInfo> {
    let mut iter = BatchIter::new(bytes);
    let out = iter
        .by_ref()
        .map(|item| {
            let (_, b) = item.expect("batch framing");
            BatchInfo {
                base_offset: b.base_offset().expect("base offset"),
                last_offset: b.last_offset(),
                size: b.size_in_bytes(),
                max_timestamp: b.max_timestamp(),
            }
        })
        .collect();
    assert_eq!(iter.position(), bytes.len(), "the bytes end in a partial batch");
    out
}

/// Offsets of the records in `bytes`.
pub fn offsets(bytes: &[u8]) -> Vec<i64> {
    decode(bytes).iter().map(|r| r.offset).collect()
}

/// A `LogConfig` from Kafka keys.
pub fn config(props: &[(&str, &str)]) -> LogConfig {
    LogConfig::from_props(props.iter().copied()).expect("valid test config")
}

/// A `LogManagerConfig` over `dirs` (`log.dirs`) with the broker keys `props`.
pub fn manager_config(dirs: &[&Path], props: &[(&str, &str)]) -> LogManagerConfig {
    let dirs = dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(",");
    let mut all = vec![("log.dirs", dirs.as_str())];
    all.extend_from_slice(props);
    LogManagerConfig::from_props(all).expect("valid test broker config")
}

/// `<20-digit base><suffix>`: the name of a segment's file.
pub fn segment_file_name(base: i64, suffix: &str) -> String {
    format!("{base:020}{suffix}")
}

/// The base offsets of the log's segments.
pub fn segment_bases(log: &UnifiedLog) -> Vec<i64> {
    log.segments().iter().map(|s| s.base_offset()).collect()
}

/// The records `k = v<offset>` at `offsets`, each timestamped `T0 + offset`: what the tests
/// that append one such record per offset read back.
pub fn expected_records(offsets: std::ops::Range<i64>) -> Vec<Rec> {
    offsets
        .map(|i| Rec {
            offset: i,
            timestamp: T0 + i,
            key: Some(b"k".to_vec()),
            value: Some(format!("v{i}").into_bytes()),
        })
        .collect()
}

/// A temporary partition directory `topic-0` and a manual clock at [`T0`].
pub struct Fixture {
    pub _tmp: tempfile::TempDir,
    pub dir: PathBuf,
    pub clock: Arc<ManualClock>,
}

impl Fixture {
    pub fn new() -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("topic-0");
        Fixture { _tmp: tmp, dir, clock: ManualClock::new(T0) }
    }

    /// Options using this fixture's clock.
    pub fn options(&self) -> LogOpenOptions {
        LogOpenOptions { clock: self.shared_clock(), ..LogOpenOptions::default() }
    }

    pub fn shared_clock(&self) -> SharedClock {
        self.clock.clone()
    }

    /// Opens the log read-write.
    pub fn open(&self, config: &LogConfig) -> UnifiedLog {
        UnifiedLog::open(&self.dir, config.clone(), self.options()).expect("open log")
    }

    /// Opens the log read-only.
    pub fn open_read_only(&self, config: &LogConfig) -> UnifiedLog {
        let options = LogOpenOptions { read_only: true, ..self.options() };
        UnifiedLog::open(&self.dir, config.clone(), options).expect("open log read-only")
    }
}

/// Appends one batch of `values` (keyed, timestamped now) as leader; returns its first offset.
pub fn append_values(log: &UnifiedLog, timestamp: i64, values: &[&str]) -> i64 {
    let mut records = values_batch(0, timestamp, values);
    log.append_as_leader(&mut records, 0).expect("leader append").first_offset
}

/// Every record from `from` to the log end, read with `read` one fetch at a time.
/// Every record at or after the batch holding `from`, through `UnifiedLog::scan` (up to the
/// log end).
pub fn scan_all(log: &UnifiedLog, from: i64) -> kafkalog::Result<Vec<Rec>> {
    let mut got = Vec::new();
    let mut scratch = Vec::new();
    log.scan(from, i64::MAX, FetchIsolation::LogEnd, |b| {
        b.for_each_record(&mut scratch, |r| {
            got.push(Rec::of(&r));
            Ok(())
        })?;
        Ok(true)
    })?;
    Ok(got)
}

pub fn read_all(log: &UnifiedLog, from: i64) -> Vec<Rec> {
    let mut out: Vec<Rec> = Vec::new();
    let mut next = from;
    loop {
        let info = log.read(next, 1 << 20, FetchIsolation::LogEnd, true).expect("read");
        if info.records.is_empty() {
            // A gap (a segment with nothing at or after `next`) ends here only at the log end.
            if next >= log.log_end_offset() {
                return out;
            }
            next += 1;
            continue;
        }
        let recs = decode(&info.records);
        next = batches(&info.records).last().expect("a batch").last_offset + 1;
        out.extend(recs.into_iter().filter(|r| r.offset >= from));
    }
}

/// Sets the modification time of every file in `dir` to a day before [`T0`], so that a later
/// write to any of them shows in [`listing`] (it stamps the wall clock, years later) however
/// coarse the file system's timestamps are and however soon the write comes.
pub fn backdate_files(dir: &Path) {
    let day_before = std::time::UNIX_EPOCH + std::time::Duration::from_millis((T0 - 86_400_000) as u64);
    for entry in std::fs::read_dir(dir).expect("list dir") {
        let path = entry.expect("dir entry").path();
        if path.is_file() {
            let file = std::fs::File::options().write(true).open(&path).expect("open to set the mtime");
            file.set_modified(day_before).expect("set the mtime");
        }
    }
}

/// Names, sizes and modification times of every file under `dir`, sorted.
pub fn listing(dir: &Path) -> Vec<(String, u64, std::time::SystemTime)> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .expect("list dir")
        .map(|e| {
            let e = e.expect("dir entry");
            let meta = e.metadata().expect("stat");
            (e.file_name().to_string_lossy().into_owned(), meta.len(), meta.modified().expect("mtime"))
        })
        .collect();
    out.sort();
    out
}

/// File names under `dir` ending with `suffix`, sorted.
pub fn files_with_suffix(dir: &Path, suffix: &str) -> Vec<String> {
    let mut out: Vec<String> = listing(dir).into_iter().map(|(n, _, _)| n).filter(|n| n.ends_with(suffix)).collect();
    out.sort();
    out
}

/// Overwrites `len` bytes of `path` at `position` with pseudo-random bytes from `seed`.
pub fn write_nonsense(path: &Path, position: u64, len: usize, seed: u64) {
    use std::os::unix::fs::FileExt;
    let mut rng = XorShift(seed | 1);
    let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
    let f = std::fs::OpenOptions::new().write(true).open(path).expect("open for corruption");
    f.write_all_at(&bytes, position).expect("write nonsense");
}

/// A tiny deterministic PRNG for corruption positions and bytes.
pub struct XorShift(pub u64);

impl XorShift {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    /// A value in `[0, n)`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A `log` crate logger that records, per thread, the lines emitted while [`capture_log`] runs
/// (tests run in parallel, and loading and retention log on the calling thread).
struct CaptureLogger;

thread_local! {
    static CAPTURED: std::cell::RefCell<Option<Vec<(::log::Level, String)>>> = const { std::cell::RefCell::new(None) };
}

impl ::log::Log for CaptureLogger {
    fn enabled(&self, _: &::log::Metadata<'_>) -> bool {
        CAPTURED.with(|c| c.borrow().is_some())
    }
    fn log(&self, record: &::log::Record<'_>) {
        CAPTURED.with(|c| {
            if let Some(lines) = c.borrow_mut().as_mut() {
                lines.push((record.level(), record.args().to_string()));
            }
        });
    }
    fn flush(&self) {}
}

static CAPTURE_LOGGER: CaptureLogger = CaptureLogger;

/// Runs `f` and returns what it returned with the log lines it emitted on this thread.
pub fn capture_log<T>(f: impl FnOnce() -> T) -> (T, Vec<(::log::Level, String)>) {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        ::log::set_logger(&CAPTURE_LOGGER).expect("no other logger in the test binary");
        ::log::set_max_level(::log::LevelFilter::Info);
    });
    CAPTURED.with(|c| *c.borrow_mut() = Some(Vec::new()));
    let out = f();
    let lines = CAPTURED.with(|c| c.borrow_mut().take()).unwrap_or_default();
    (out, lines)
}

/// The lines at `level` among `lines`.
pub fn lines_at(lines: &[(::log::Level, String)], level: ::log::Level) -> Vec<&str> {
    lines.iter().filter(|(l, _)| *l == level).map(|(_, s)| s.as_str()).collect()
}
