//! kafkalog's half of `make bench-kafka` (benches/bench_kafka.py runs the other half,
//! tests/kit/jvm/java/KafkaStorageBench.java, on the same files).
//!
//! ```text
//! bench_workload write --out DIR --record-size N --codec none|lz4 [--total-mib 32]
//!                      [--producers 0] [--duplicate-every 0]
//! bench_workload run --workload DIR [--ops append_leader,append_follower,append_segment,scan]
//!                    [--warmup-reps 2] [--warmup-s 1] [--reps 5] [--scratch DIR] [--log-out DIR]
//! ```
//!
//! `write` builds producer batches exactly as benches/log_bench.rs does (about 16 KiB each,
//! `record-size`-byte JSON-like values, 16-byte keys, base offset 0, no producer id) and writes
//! them, concatenated in Kafka's own batch framing, to `DIR/producer.batches`, with
//! `DIR/workload.properties` describing them. With `--producers N` the batches are idempotent:
//! batch `i` from producer id `1000 + i % N`, epoch 0, sequences counting on per producer (the
//! label gains `/idemN`); with `--duplicate-every K` every K-th batch is sent twice in a row by
//! `append_leader` (a producer's retry: the duplicate check returns the first append's offsets,
//! nothing is written), on both sides.
//!
//! `run` times kafkalog on those batches, with warm-up repetitions first and then `reps`
//! measured ones, each on a fresh log; only the appends (or the scan) are timed, never the
//! open, close (fsync) or directory removal:
//!
//! - `append_leader`: `UnifiedLog::append_as_leader(batch, 0)` once per producer batch
//!   (validation, offset assignment, roll check, indexes, write to the page cache);
//! - `append_follower`: `UnifiedLog::append_as_follower(batch)` once per batch, the batches
//!   carrying the offsets and leader epoch 0 a leader would have written (CRC and framing
//!   checks, indexes, write);
//! - `append_segment`: `LogSegment::append(last_offset, batch, count)` of those same batches
//!   on a bare segment (no log, no validation: indexes and write only);
//! - `scan`: `UnifiedLog::scan` over the log the last `append_leader` repetition wrote (kept
//!   in `--log-out`, reopened), `ensure_valid` (CRC) on every batch and every record decoded,
//!   key and value touched.
//!
//! Output, one line per measurement (throughputs in MiB/s of batch bytes and records/s):
//!
//! ```text
//! kafkalog append_leader 100B/none bytes=33554432 records=... batches=... warmup=2 reps=5 \
//!     best_s=... median_s=... MiB/s=... median_MiB/s=... rec/s=... median_rec/s=...
//! ```

use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kafkalog::log::unified_log::{FetchIsolation, LogOpenOptions, UnifiedLog};
use kafkalog::record::batch::{RecordBatch, RecordBatchMut};
use kafkalog::record::compression::CompressionType;
use kafkalog::record::records::next_batch_size;
use kafkalog::segment::log_segment::LogSegment;
use kafkalog::util::clock::system_clock;

const BATCHES_FILE: &str = "producer.batches";
const PROPERTIES_FILE: &str = "workload.properties";

type Res<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("write") => write(&parse_flags(&args[1..])),
        Some("run") => run(&parse_flags(&args[1..])),
        _ => Err("usage: bench_workload write|run --flag value ... (see the file's doc comment)".into()),
    };
    if let Err(e) = result {
        eprintln!("bench_workload: {e}");
        std::process::exit(1);
    }
}

fn parse_flags(args: &[String]) -> BTreeMap<String, String> {
    let mut flags = BTreeMap::new();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let name = flag.strip_prefix("--").unwrap_or_else(|| die(&format!("expected --flag, got {flag}")));
        let value = it.next().unwrap_or_else(|| die(&format!("--{name} needs a value")));
        flags.insert(name.to_string(), value.clone());
    }
    flags
}

fn die(msg: &str) -> ! {
    eprintln!("bench_workload: {msg}");
    std::process::exit(2)
}

fn flag<T: std::str::FromStr>(flags: &BTreeMap<String, String>, name: &str, default: Option<T>) -> Res<T> {
    match flags.get(name) {
        Some(v) => v.parse().map_err(|_| format!("bad --{name} {v:?}").into()),
        None => default.ok_or_else(|| format!("--{name} is required").into()),
    }
}

#[path = "workload.rs"]
mod workload;
use workload::{config, producer_batches_of, BATCH_BYTES};

fn write(flags: &BTreeMap<String, String>) -> Res<()> {
    let out = PathBuf::from(flag::<String>(flags, "out", None)?);
    let record_size: usize = flag(flags, "record-size", None)?;
    let codec_name: String = flag(flags, "codec", Some("none".to_string()))?;
    let codec = CompressionType::from_name(&codec_name).ok_or_else(|| format!("unknown codec {codec_name}"))?;
    let total_mib: usize = flag(flags, "total-mib", Some(32))?;
    let producers: usize = flag(flags, "producers", Some(0))?;
    let duplicate_every: usize = flag(flags, "duplicate-every", Some(0))?;
    let (batches, records) = producer_batches_of(record_size, codec, total_mib << 20, producers);
    std::fs::create_dir_all(&out)?;
    let bytes: Vec<u8> = batches.concat();
    std::fs::write(out.join(BATCHES_FILE), &bytes)?;
    let mut label = format!("{record_size}B/{}", codec.name());
    if producers > 0 {
        label = format!("{label}/idem{producers}");
    }
    std::fs::write(
        out.join(PROPERTIES_FILE),
        format!(
            "label={label}\nrecord.size={record_size}\ncodec={}\nbatch.bytes={BATCH_BYTES}\nbatches={}\nrecords={records}\nbytes={}\n\
             producers={producers}\nduplicate.every={duplicate_every}\n",
            codec.name(),
            batches.len(),
            bytes.len()
        ),
    )?;
    println!("wrote {label}: {} batches, {records} records, {} bytes in {}", batches.len(), bytes.len(), out.display());
    Ok(())
}

struct Workload {
    label: String,
    /// Producer batches, base offset 0 each, partition leader epoch -1.
    producer: Vec<Vec<u8>>,
    /// The same batches as a leader writes them: offsets assigned, partition leader epoch 0.
    follower: Vec<Vec<u8>>,
    /// (last offset, record count) of each follower batch.
    follower_meta: Vec<(i64, u64)>,
    records: u64,
    bytes: u64,
    /// A leader append sends batch `i` twice in a row (a producer's retry, which the log's
    /// duplicate check answers with the first append's offsets) when `i % n == n - 1`; 0: never.
    duplicate_every: usize,
}

impl Workload {
    fn retried(&self, i: usize) -> bool {
        self.duplicate_every > 0 && i % self.duplicate_every == self.duplicate_every - 1
    }
}

fn load_workload(dir: &Path) -> Res<Workload> {
    let props = std::fs::read_to_string(dir.join(PROPERTIES_FILE))?;
    let label = props
        .lines()
        .find_map(|l| l.strip_prefix("label="))
        .map_or_else(|| dir.file_name().unwrap_or_default().to_string_lossy().into_owned(), str::to_string);
    let duplicate_every = props.lines().find_map(|l| l.strip_prefix("duplicate.every=")).unwrap_or("0").parse()?;
    let data = std::fs::read(dir.join(BATCHES_FILE))?;
    let mut producer = Vec::new();
    let mut pos = 0;
    while pos < data.len() {
        let size = next_batch_size(&data[pos..])?
            .filter(|&n| pos + n <= data.len())
            .ok_or_else(|| format!("truncated batch at position {pos} of {}", dir.join(BATCHES_FILE).display()))?;
        RecordBatch::new(&data[pos..pos + size])?.ensure_valid()?;
        producer.push(data[pos..pos + size].to_vec());
        pos += size;
    }
    let mut follower = producer.clone();
    let mut follower_meta = Vec::with_capacity(follower.len());
    let mut next = 0i64;
    let mut records = 0u64;
    for b in &mut follower {
        let mut m = RecordBatchMut::new(b)?;
        m.set_base_offset(next);
        m.set_partition_leader_epoch(0);
        let view = m.view();
        let count = u64::try_from(view.records_count())?;
        follower_meta.push((view.last_offset(), count));
        next = view.next_offset();
        records += count;
    }
    Ok(Workload { label, producer, follower, follower_meta, records, bytes: data.len() as u64, duplicate_every })
}

struct Timing {
    warmup: usize,
    reps: usize,
    warmup_time: Duration,
}

/// Runs `setup` + `timed` + `teardown` at least `warmup` times and for at least `warmup_time`
/// unmeasured, then `reps` times measured; returns the number of warm-ups run and the measured
/// durations of `timed`.
fn measure<S, T>(
    timing: &Timing,
    mut setup: impl FnMut() -> S,
    mut timed: impl FnMut(&mut S),
    mut teardown: T,
) -> (usize, Vec<f64>)
where
    T: FnMut(S),
{
    let mut one = || {
        let mut state = setup();
        let t0 = Instant::now();
        timed(&mut state);
        let elapsed = t0.elapsed().as_secs_f64();
        teardown(state);
        elapsed
    };
    let start = Instant::now();
    let mut done = 0;
    while done < timing.warmup || start.elapsed() < timing.warmup_time {
        one();
        done += 1;
    }
    (done, (0..timing.reps).map(|_| one()).collect())
}

fn report(op: &str, w: &Workload, (warmups, mut secs): (usize, Vec<f64>)) {
    secs.sort_by(f64::total_cmp);
    let best = secs[0];
    let n = secs.len();
    let median = if n % 2 == 1 { secs[n / 2] } else { (secs[n / 2 - 1] + secs[n / 2]) / 2.0 };
    let mib = w.bytes as f64 / f64::from(1 << 20);
    println!(
        "kafkalog {op} {} bytes={} records={} batches={} warmup={} reps={} best_s={best:.6} median_s={median:.6} \
         MiB/s={:.1} median_MiB/s={:.1} rec/s={:.0} median_rec/s={:.0}",
        w.label,
        w.bytes,
        w.records,
        w.producer.len(),
        warmups,
        n,
        mib / best,
        mib / median,
        w.records as f64 / best,
        w.records as f64 / median,
    );
}

fn fresh_dir(scratch: &Path) -> PathBuf {
    let dir = tempfile::Builder::new().prefix("kafkalog-bench-").tempdir_in(scratch).expect("temp dir").keep();
    dir.join("bench-0")
}

fn remove(partition_dir: &Path) {
    if let Some(parent) = partition_dir.parent() {
        let _ = std::fs::remove_dir_all(parent);
    }
}

fn run(flags: &BTreeMap<String, String>) -> Res<()> {
    let w = load_workload(Path::new(&flag::<String>(flags, "workload", None)?))?;
    let ops: String = flag(flags, "ops", Some("append_leader,append_follower,append_segment,scan".to_string()))?;
    let timing = Timing {
        warmup: flag(flags, "warmup-reps", Some(2))?,
        reps: flag::<usize>(flags, "reps", Some(5))?.max(1),
        warmup_time: Duration::from_secs_f64(flag(flags, "warmup-s", Some(1.0))?),
    };
    let scratch = PathBuf::from(flag(flags, "scratch", Some(std::env::temp_dir().display().to_string()))?);
    std::fs::create_dir_all(&scratch)?;
    let log_out: PathBuf = match flags.get("log-out") {
        Some(p) => PathBuf::from(p),
        None => fresh_dir(&scratch),
    };
    let ops: Vec<&str> = ops.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
    for op in &ops {
        match *op {
            "append_leader" => {
                let secs = measure(
                    &timing,
                    || {
                        let dir = fresh_dir(&scratch);
                        let log = UnifiedLog::open(&dir, config(), LogOpenOptions::default()).unwrap();
                        // A retry resends the producer's original bytes (the first append
                        // rewrote its copy's offsets in place).
                        let retries: Vec<Option<Vec<u8>>> =
                            (0..w.producer.len()).map(|i| w.retried(i).then(|| w.producer[i].clone())).collect();
                        (dir, log, (w.producer.clone(), retries))
                    },
                    |(_, log, (batches, retries))| {
                        for (b, retry) in batches.iter_mut().zip(retries.iter_mut()) {
                            log.append_as_leader(b, 0).unwrap();
                            if let Some(r) = retry {
                                black_box(log.append_as_leader(r, 0).unwrap());
                            }
                        }
                        black_box(log.log_end_offset());
                    },
                    |(dir, log, _)| {
                        assert_eq!(log.log_end_offset(), w.records as i64);
                        log.close().unwrap();
                        drop(log);
                        remove(&dir);
                    },
                );
                report(op, &w, secs);
            }
            "append_follower" => {
                let secs = measure(
                    &timing,
                    || {
                        let dir = fresh_dir(&scratch);
                        let log = UnifiedLog::open(&dir, config(), LogOpenOptions::default()).unwrap();
                        (dir, log)
                    },
                    |(_, log)| {
                        for b in &w.follower {
                            log.append_as_follower(b).unwrap();
                        }
                        black_box(log.log_end_offset());
                    },
                    |(dir, log)| {
                        assert_eq!(log.log_end_offset(), w.records as i64);
                        log.close().unwrap();
                        drop(log);
                        remove(&dir);
                    },
                );
                report(op, &w, secs);
            }
            "append_segment" => {
                let cfg = config();
                let secs = measure(
                    &timing,
                    || {
                        let dir = fresh_dir(&scratch);
                        std::fs::create_dir_all(&dir).unwrap();
                        let seg = LogSegment::open(&dir, 0, &cfg, system_clock(), "", false, false).unwrap();
                        (dir, seg)
                    },
                    |(_, seg)| {
                        for (b, &(last, count)) in w.follower.iter().zip(&w.follower_meta) {
                            seg.append(last, b, count).unwrap();
                        }
                        black_box(seg.size());
                    },
                    |(dir, seg)| {
                        assert_eq!(seg.size(), w.bytes);
                        seg.close().unwrap();
                        drop(seg);
                        remove(&dir);
                    },
                );
                report(op, &w, secs);
            }
            "scan" => scan(&w, &timing, &log_out)?,
            other => return Err(format!("unknown op {other}").into()),
        }
    }
    if !flags.contains_key("log-out") {
        remove(&log_out);
    }
    Ok(())
}

/// Writes the leader log to scan into `log_out` (as one `append_leader` repetition does),
/// closes it, reopens it and times full scans.
fn scan(w: &Workload, timing: &Timing, log_out: &Path) -> Res<()> {
    if log_out.exists() {
        std::fs::remove_dir_all(log_out)?;
    }
    {
        let log = UnifiedLog::open(log_out, config(), LogOpenOptions::default())?;
        for b in &mut w.producer.clone() {
            log.append_as_leader(b, 0)?;
        }
        log.close()?;
    }
    let log = UnifiedLog::open(log_out, config(), LogOpenOptions::default())?;
    let mut scratch = Vec::new();
    let secs = measure(
        timing,
        || (),
        |()| {
            let mut n = 0u64;
            let mut touched = 0usize;
            log.scan(0, i64::MAX, FetchIsolation::LogEnd, |batch| {
                batch.ensure_valid()?;
                batch.for_each_record(&mut scratch, |r| {
                    n += 1;
                    touched += r.key.map_or(0, <[u8]>::len) + r.value.map_or(0, <[u8]>::len);
                    Ok(())
                })?;
                Ok(true)
            })
            .unwrap();
            assert_eq!(n, w.records);
            black_box(touched);
        },
        |()| {},
    );
    log.close()?;
    report("scan", w, secs);
    Ok(())
}
