//! Read-only checks of one segment for `kafkalog verify`: its `.log` file with the validation
//! recovery applies (`LogSegment::recovery_problem`: batches follow on, CRC and sizes, offsets
//! growing from the segment's base; and the torn-tail verdict reads use), then its offset, time
//! and transaction indexes against the batches found (Kafka's `OffsetIndex.sanityCheck`,
//! `TimeIndex.sanityCheck` and `TransactionIndex.sanityCheck`, and the entries one by one, as
//! `DumpLogSegments --verify-index-only` does). Nothing is written, locked or logged.
//!
//! No Kafka class: Kafka's checks are spread over `LogSegment.recover` (which truncates instead
//! of reporting) and DumpLogSegments.
//!
//! Thread-safety: stateless functions over a segment opened read-only.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::index::offset_index::OffsetIndex;
use crate::index::time_index::TimeIndex;
use crate::index::transaction_index::TransactionIndex;
use crate::segment::log_segment::LogSegment;

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// Damage, or a state recovery changes: `verify` exits 1.
    Problem,
    /// Expected on a live broker's directory (an append or a delete in progress): reported,
    /// not counted.
    Note,
}

/// One finding: the file, the byte position in it when there is one, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Problem or note.
    pub severity: Severity,
    /// The file.
    pub file: PathBuf,
    /// Byte position in the file, when the finding has one.
    pub position: Option<u64>,
    /// What is wrong, and what recovery does about it.
    pub message: String,
}

impl Finding {
    /// A problem in `file` at `position`.
    pub fn problem(file: &Path, position: Option<u64>, message: impl Into<String>) -> Self {
        Finding { severity: Severity::Problem, file: file.to_path_buf(), position, message: message.into() }
    }

    /// A note (not counted as a problem).
    pub fn note(file: &Path, position: Option<u64>, message: impl Into<String>) -> Self {
        Finding { severity: Severity::Note, file: file.to_path_buf(), position, message: message.into() }
    }
}

/// A batch's header fields, as the scan found them.
#[derive(Debug, Clone, Copy)]
struct Span {
    position: u64,
    base: i64,
    last: i64,
    max_timestamp: i64,
    magic: u8,
}

/// What checking one segment found.
#[derive(Debug, Default)]
pub struct SegmentCheck {
    /// Findings, in file order.
    pub findings: Vec<Finding>,
    /// Offset after the last valid batch (the segment's base when it has none).
    pub next_offset: i64,
    /// Bytes of valid batches from the start of the file.
    pub valid_bytes: u64,
}

impl SegmentCheck {
    /// Whether any finding is a problem.
    pub fn has_problems(&self) -> bool {
        self.findings.iter().any(|f| f.severity == Severity::Problem)
    }
}

/// Where the segment sits in its log.
#[derive(Debug, Clone, Copy)]
pub struct SegmentPlace {
    /// The next segment's base offset: every offset here must lie below it.
    pub next_base: Option<i64>,
    /// The last (active) segment: its indexes may be preallocated, and on a live directory its
    /// tail may be an append in progress.
    pub active: bool,
    /// Another process holds the directory (a broker or a writer is running).
    pub live: bool,
    /// The next load recovers this segment (it holds or follows the recovery point of a log
    /// dir without a clean-shutdown marker): kafkalog trims a rolled segment's indexes on the
    /// flush after the roll, so a crash before that flush leaves them preallocated.
    pub recovered_at_load: bool,
}

/// Checks `segment` (opened read-only) and its three index files.
pub fn check_segment(segment: &LogSegment, place: SegmentPlace) -> Result<SegmentCheck> {
    let mut check = SegmentCheck { next_offset: segment.base_offset(), ..SegmentCheck::default() };
    let spans = scan_log(segment, place, &mut check)?;
    let whole_log = !check.has_problems();
    let dir = segment.path().parent().map(Path::to_path_buf).unwrap_or_default();
    let base = segment.base_offset();
    check_offset_index(&crate::file_names::offset_index_file(&dir, base), base, &spans, place, &mut check)?;
    check_time_index(&crate::file_names::time_index_file(&dir, base), base, &spans, place, whole_log, &mut check)?;
    check_txn_index(&crate::file_names::transaction_index_file(&dir, base), base, &spans, &mut check)?;
    Ok(check)
}

/// Scans the batches with recovery's validation; returns the valid ones.
fn scan_log(segment: &LogSegment, place: SegmentPlace, check: &mut SegmentCheck) -> Result<Vec<Span>> {
    let log = segment.log();
    let path = segment.path();
    let mut spans: Vec<Span> = Vec::new();
    let mut valid = 0u64;
    let mut last_offset = i64::MIN;
    let mut stop: Option<(u64, String)> = None;
    let mut buf = Vec::new();
    let scan = log.for_each_batch(0, log.size(), &mut buf, |pos, batch| {
        if let Some(why) = segment.recovery_problem(&batch, pos, valid, last_offset) {
            stop = Some((pos, why));
            return Ok(false);
        }
        let (base, last) = (batch.base_offset()?, batch.last_offset());
        if let Some(next_base) = place.next_base.filter(|n| last >= *n) {
            stop = Some((pos, format!("the batch's last offset {last} is not below the next segment's base offset {next_base}")));
            return Ok(false);
        }
        if !segment.can_convert_to_relative_offset(last) {
            stop = Some((pos, format!("the batch's last offset {last} is too far from the segment's base offset for one segment (recovery splits the segment)")));
            return Ok(false);
        }
        spans.push(Span { position: pos, base, last, max_timestamp: batch.max_timestamp(), magic: batch.magic() });
        last_offset = last;
        valid += batch.size_in_bytes() as u64;
        Ok(true)
    });
    match scan {
        Err(Error::CorruptRecord { position, reason, .. }) => stop = Some((position, reason)),
        Err(e) => return Err(e),
        Ok(end) if stop.is_none() && end.torn_tail => {
            if let Some(reason) = segment.damaged_length(end.position)? {
                stop = Some((end.position, reason));
            } else {
                let bytes = log.size() - end.position;
                let what = format!("the last {bytes} bytes do not form a complete record batch");
                if place.active && place.live {
                    check.findings.push(Finding::note(&path, Some(end.position), format!(
                        "{what}: an append in progress on this live directory (after a crash, recovery would truncate them)"
                    )));
                } else {
                    check.findings.push(Finding::problem(
                        &path,
                        Some(end.position),
                        format!(
                            "{what} (a torn write or a cut file): recovery truncates the segment to {} bytes",
                            end.position
                        ),
                    ));
                }
            }
        }
        Ok(_) => {}
    }
    if let Some((position, reason)) = stop {
        let cut = log.size().saturating_sub(position);
        check.findings.push(Finding::problem(&path, Some(position), format!(
            "invalid record batch: {reason}; recovery truncates the segment here ({cut} bytes) and deletes the segments after it"
        )));
    }
    check.valid_bytes = valid;
    check.next_offset = spans.last().map_or(segment.base_offset(), |s| s.last.saturating_add(1));
    Ok(spans)
}

/// The entries after `accepted` in `bytes` (whole entries of `entry_size`): all zeros is a
/// preallocated tail (fine only in the active segment's index); else the first entry that is
/// not, with its position.
fn rejected_tail(bytes: &[u8], accepted: usize, entry_size: usize) -> Option<(u64, bool)> {
    let from = accepted * entry_size;
    if from >= bytes.len() {
        return None;
    }
    let first_nonzero = bytes[from..].chunks(entry_size).position(|e| e.iter().any(|&b| b != 0));
    Some(match first_nonzero {
        Some(n) => ((from + n * entry_size) as u64, false),
        None => (from as u64, true),
    })
}

/// Reads an index file; `None` (with a finding) when it is missing.
fn read_index(path: &Path, what: &str, check: &mut SegmentCheck) -> Result<Option<Vec<u8>>> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            check.findings.push(Finding::problem(
                path,
                None,
                format!("the {what} is missing: recovery of the segment rebuilds it"),
            ));
            Ok(None)
        }
        Err(e) => Err(Error::io(path, "read", e)),
    }
}

fn length_and_tail(
    path: &Path,
    bytes: &[u8],
    accepted: usize,
    entry_size: usize,
    place: SegmentPlace,
    check: &mut SegmentCheck,
) -> bool {
    if !bytes.len().is_multiple_of(entry_size) {
        let whole = bytes.len() / entry_size * entry_size;
        check.findings.push(Finding::problem(
            path,
            Some(whole as u64),
            format!(
                "the file holds {} bytes, not a multiple of the {entry_size}-byte entry size (Kafka's sanityCheck): \
             recovery rebuilds it",
                bytes.len()
            ),
        ));
        return false;
    }
    match rejected_tail(bytes, accepted, entry_size) {
        Some((at, true)) if !place.active && place.recovered_at_load => {
            check.findings.push(Finding::note(
                path,
                Some(at),
                format!(
                    "{} preallocated (all-zero) entries after the last entry: the flush after the roll, which \
                     trims a rolled segment's indexes, had not run when the process stopped; the next load \
                     recovers the segment",
                    (bytes.len() - at as usize) / entry_size
                ),
            ));
            true
        }
        Some((at, true)) if !place.active => {
            check.findings.push(Finding::problem(
                path,
                Some(at),
                format!(
                "{} preallocated (all-zero) entries after the last entry: the index of a rolled segment is trimmed \
                 (left by a crash before the roll finished); recovery rebuilds it",
                (bytes.len() - at as usize) / entry_size
            ),
            ));
            false
        }
        Some((at, false)) => {
            check.findings.push(Finding::problem(path, Some(at), format!(
                "entry {} does not follow the one before it (offsets and {} must increase): recovery rebuilds the index",
                at as usize / entry_size,
                if entry_size == 8 { "positions" } else { "timestamps" }
            )));
            false
        }
        _ => true,
    }
}

/// The offset index: whole entries, increasing (the prefix `OffsetIndex::open_read_only`
/// accepts), each pointing at the start of a batch whose base offset is at or below the
/// entry's offset, the entry's offset being a batch's last offset at or after that position
/// (Kafka indexes the largest offset of each append).
fn check_offset_index(
    path: &Path,
    base: i64,
    spans: &[Span],
    place: SegmentPlace,
    check: &mut SegmentCheck,
) -> Result<()> {
    let Some(bytes) = read_index(path, "offset index", check)? else { return Ok(()) };
    let index = OffsetIndex::open_read_only(path, base)?;
    if sanity_check_failed(path, index.sanity_check(), check) {
        return Ok(());
    }
    if !length_and_tail(path, &bytes, index.entries(), 8, place, check) {
        return Ok(());
    }
    let legacy = spans.iter().any(|s| s.magic < 2);
    for n in 0..index.entries() {
        let entry = index.entry(n)?;
        let at = spans.partition_point(|s| s.position < u64::from(entry.position));
        let why = match spans.get(at) {
            None => Some(format!("position {} is past the last valid batch", entry.position)),
            Some(s) if s.position != u64::from(entry.position) => {
                Some(format!("position {} is not the start of a record batch", entry.position))
            }
            Some(s) if s.base > entry.offset => Some(format!(
                "the record batch at position {} starts at offset {}, after the entry's offset",
                entry.position, s.base
            )),
            Some(_) if !legacy && !ends_batch_at_or_after(spans, entry.offset, at) => Some(format!(
                "offset {} is not the last offset of a record batch at or after position {}",
                entry.offset, entry.position
            )),
            Some(_) => None,
        };
        if let Some(why) = why {
            check.findings.push(Finding::problem(
                path,
                Some(n as u64 * 8),
                format!(
                    "entry {n} (offset {}, position {}): {why}; recovery rebuilds the index",
                    entry.offset, entry.position
                ),
            ));
            return Ok(());
        }
    }
    Ok(())
}

/// The batch holding `offset` (the spans' offsets increase: a binary search).
fn batch_holding(spans: &[Span], offset: i64) -> Option<&Span> {
    spans.get(spans.partition_point(|s| s.last < offset)).filter(|s| s.base <= offset)
}

/// Whether `offset` is the last offset of a batch at index `at` or later.
fn ends_batch_at_or_after(spans: &[Span], offset: i64, at: usize) -> bool {
    let n = spans.partition_point(|s| s.last < offset);
    n >= at && spans.get(n).is_some_and(|s| s.last == offset)
}

/// The time index: whole entries, timestamps increasing and offsets never decreasing (the prefix
/// `TimeIndex::open_read_only` accepts, Kafka's `sanityCheck`), each naming the largest
/// timestamp up to a batch: the timestamp is the max timestamp of the batch holding the
/// entry's offset. A rolled segment's last entry holds its largest timestamp.
/// Records a failed index `sanity_check` (Kafka's `sanityCheck`) as a problem; true if it failed.
fn sanity_check_failed(path: &Path, result: Result<()>, check: &mut SegmentCheck) -> bool {
    let Err(Error::CorruptIndex { reason, .. }) = result else { return false };
    check.findings.push(Finding::problem(path, None, format!("{reason} (Kafka's sanityCheck): recovery rebuilds it")));
    true
}

fn check_time_index(
    path: &Path,
    base: i64,
    spans: &[Span],
    place: SegmentPlace,
    whole_log: bool,
    check: &mut SegmentCheck,
) -> Result<()> {
    let Some(bytes) = read_index(path, "time index", check)? else { return Ok(()) };
    let index = TimeIndex::open_read_only(path, base)?;
    if sanity_check_failed(path, index.sanity_check(), check) {
        return Ok(());
    }
    if !length_and_tail(path, &bytes, index.entries(), 12, place, check) {
        return Ok(());
    }
    let v2 = spans.iter().all(|s| s.magic >= 2);
    for n in 0..index.entries() {
        let entry = index.entry(n)?;
        let holder = batch_holding(spans, entry.offset);
        let why = match holder {
            None => Some(format!("offset {} is in no record batch of the segment", entry.offset)),
            Some(s) if v2 && s.max_timestamp != entry.timestamp => Some(format!(
                "the record batch holding offset {} has max timestamp {}, not {}",
                entry.offset, s.max_timestamp, entry.timestamp
            )),
            Some(_) => None,
        };
        if let Some(why) = why {
            check.findings.push(Finding::problem(
                path,
                Some(n as u64 * 12),
                format!(
                    "entry {n} (timestamp {}, offset {}): {why}; recovery rebuilds the index",
                    entry.timestamp, entry.offset
                ),
            ));
            return Ok(());
        }
    }
    let max = spans.iter().map(|s| s.max_timestamp).max().unwrap_or(-1);
    let last = if index.entries() == 0 { -1 } else { index.entry(index.entries() - 1)?.timestamp };
    if !place.active && whole_log && v2 && max >= 0 && last != max {
        check.findings.push(Finding::problem(
            path,
            Some(bytes.len() as u64),
            format!(
                "the last entry's timestamp is {last}, but the rolled segment's largest timestamp is {max} (a roll \
             appends it): recovery rebuilds the index"
            ),
        ));
    }
    Ok(())
}

/// The transaction index: Kafka's `sanityCheck` (whole entries of a known version, none ending
/// below the segment's base offset), and no aborted transaction ending past the segment's data.
fn check_txn_index(path: &Path, base: i64, spans: &[Span], check: &mut SegmentCheck) -> Result<()> {
    let index = TransactionIndex::new(base, path.to_path_buf(), false);
    if !index.exists() {
        return Ok(());
    }
    match index.sanity_check() {
        Err(Error::CorruptIndex { reason, .. }) => {
            check.findings.push(Finding::problem(path, None, format!("{reason}: recovery of the segment rebuilds it")));
            return Ok(());
        }
        other => other?,
    }
    let next = spans.last().map_or(base, |s| s.last + 1);
    for (n, txn) in index.all_aborted_txns()?.iter().enumerate() {
        if txn.last_offset >= next {
            check.findings.push(Finding::problem(path, Some((n * crate::index::transaction_index::AbortedTxn::SIZE) as u64), format!(
                "aborted transaction {txn} ends at offset {}, past the segment's last offset {}: recovery rebuilds the index",
                txn.last_offset, next - 1
            )));
            return Ok(());
        }
    }
    Ok(())
}
