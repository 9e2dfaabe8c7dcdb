//! Retention for `cleanup.policy=delete` (Kafka's `UnifiedLog.deleteOldSegments` and its three
//! predicates). Segments are considered oldest first and the walk stops at the first one that
//! must stay; no segment holding offsets at or above the high watermark is ever deleted; the log
//! start offset moves past the deleted segments before they leave the log, and their files are
//! renamed `.deleted` and unlinked after `file.delete.delay.ms`.
//!
//! Thread-safety: runs under the log's write lock.

use std::sync::Arc;

use super::UnifiedLog;
use crate::error::Result;
use crate::segment::log_segment::LogSegment;

/// Why a segment was deleted (Kafka's three retention checks, in the order they run).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetentionReason {
    /// The whole segment lies below the log start offset (after `deleteRecords`).
    LogStartOffsetBreach,
    /// The log is larger than `retention.bytes`.
    RetentionSizeBreach,
    /// The segment's largest timestamp is older than `retention.ms`.
    RetentionMsBreach,
}

impl RetentionReason {
    /// The short name used in reports (`log_start_offset`, `retention_bytes`, `retention_ms`).
    pub fn name(self) -> &'static str {
        match self {
            RetentionReason::LogStartOffsetBreach => "log_start_offset",
            RetentionReason::RetentionSizeBreach => "retention_bytes",
            RetentionReason::RetentionMsBreach => "retention_ms",
        }
    }
}

/// One deleted segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeletedSegment {
    /// Its base offset.
    pub base_offset: i64,
    /// The offset after it (the next segment's base, or the log end).
    pub next_offset: i64,
    /// Bytes in its `.log` file.
    pub size: u64,
    /// Its largest record timestamp (or the file's mtime when it has none).
    pub largest_timestamp: i64,
    /// Which check deleted it.
    pub reason: RetentionReason,
}

/// What one retention run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RetentionResult {
    /// Deleted segments, oldest first.
    pub deleted: Vec<DeletedSegment>,
    /// One line per segment whose largest timestamp lies in the future (such a segment is never
    /// old enough for `retention.ms` until the clock catches up).
    pub warnings: Vec<String>,
    /// The log start offset after the run.
    pub log_start_offset: i64,
}

/// A retention check on one segment, given the segment after it.
type SegmentPredicate<'a> = dyn FnMut(&LogSegment, Option<&Arc<LogSegment>>) -> Result<bool> + 'a;

/// kafkalog's opt-in additions to Kafka's retention.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RetentionOptions {
    /// Judge a segment whose largest record timestamp lies in the future by its file's
    /// modification time instead. Kafka keeps such a segment until the clock passes its
    /// timestamps, which a producer with a wrong clock can make "forever".
    pub cap_future_timestamps: bool,
}

/// One of Kafka's three retention checks, applied segment by segment, oldest first (the
/// `retention.bytes` check counts down the bytes still over the limit). Not thread-safe: one
/// walk's state.
struct BreachCheck {
    reason: RetentionReason,
    now: i64,
    log_start: i64,
    retention_ms: i64,
    size_over: i64,
    cap_future_timestamps: bool,
}

impl BreachCheck {
    /// The check for `reason` on a log of `size` bytes, or None when it cannot delete anything
    /// (`retention.bytes` not exceeded or unlimited, `retention.ms` unlimited).
    fn new(
        reason: RetentionReason,
        config: &crate::config::LogConfig,
        now: i64,
        log_start: i64,
        size: i64,
        options: RetentionOptions,
    ) -> Option<Self> {
        let size_over = match reason {
            RetentionReason::RetentionSizeBreach => {
                if config.retention_bytes < 0 || size < config.retention_bytes {
                    return None;
                }
                size - config.retention_bytes
            }
            RetentionReason::RetentionMsBreach if config.retention_ms < 0 => return None,
            _ => 0,
        };
        Some(BreachCheck {
            reason,
            now,
            log_start,
            retention_ms: config.retention_ms,
            size_over,
            cap_future_timestamps: options.cap_future_timestamps,
        })
    }

    /// The largest timestamp `retention.ms` judges `segment` by.
    fn judged_timestamp(&self, segment: &LogSegment) -> Result<i64> {
        let largest = segment.largest_timestamp()?;
        if largest > self.now && self.cap_future_timestamps {
            return segment.last_modified();
        }
        Ok(largest)
    }

    fn breached(&mut self, segment: &LogSegment, next: Option<&Arc<LogSegment>>) -> Result<bool> {
        Ok(match self.reason {
            RetentionReason::LogStartOffsetBreach => next.is_some_and(|n| n.base_offset() <= self.log_start),
            RetentionReason::RetentionSizeBreach => {
                let fits = self.size_over - segment.size() as i64 >= 0;
                if fits {
                    self.size_over -= segment.size() as i64;
                }
                fits
            }
            RetentionReason::RetentionMsBreach => self.now - self.judged_timestamp(segment)? > self.retention_ms,
        })
    }
}

/// What retention would delete at a given time, without deleting anything (a dry run of
/// [`UnifiedLog::delete_old_segments`], for tools). A plain value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RetentionPlan {
    /// The segments the run would delete, oldest first, each with the check that takes it.
    pub would_delete: Vec<DeletedSegment>,
    /// The run's future-timestamp warnings.
    pub warnings: Vec<String>,
    /// The log start offset after the run.
    pub log_start_offset: i64,
    /// The next segment `retention.ms` will delete, and from when (ms): the oldest segment the
    /// run keeps, once its largest timestamp is older than `retention.ms`. None without `delete`
    /// in `cleanup.policy`, with `retention.ms=-1`, or with nothing but an empty active segment
    /// left.
    pub next_expiry: Option<(i64, i64)>,
}

impl UnifiedLog {
    /// Deletes the segments retention allows (Kafka's `deleteOldSegments`): with `delete` in
    /// `cleanup.policy`, the log-start, `retention.bytes` and `retention.ms` checks in that
    /// order; otherwise the log-start check only. Every segment with future timestamps gets a
    /// warning.
    pub fn delete_old_segments(&self) -> Result<RetentionResult> {
        self.delete_old_segments_with(RetentionOptions::default())
    }

    /// [`UnifiedLog::delete_old_segments`] with kafkalog's options.
    pub fn delete_old_segments_with(&self, options: RetentionOptions) -> Result<RetentionResult> {
        self.handle_io(self.delete_old_segments_inner(options))
    }

    fn delete_old_segments_inner(&self, options: RetentionOptions) -> Result<RetentionResult> {
        self.check_writable()?;
        let _guard = self.write_lock.lock();
        self.check_open()?;
        let config = self.config();
        let mut result = RetentionResult::default();
        self.delete_breached(RetentionReason::LogStartOffsetBreach, options, &mut result)?;
        if config.delete() {
            self.delete_breached(RetentionReason::RetentionSizeBreach, options, &mut result)?;
            if config.retention_ms >= 0 {
                self.warn_future_timestamps(options, &mut result)?;
            }
            self.delete_breached(RetentionReason::RetentionMsBreach, options, &mut result)?;
        }
        self.local.delete_due_files(false)?;
        result.log_start_offset = self.log_start_offset();
        Ok(result)
    }

    /// One warning per segment whose largest timestamp lies in the future (Kafka warns only for
    /// the segment where its walk stops).
    fn warn_future_timestamps(&self, options: RetentionOptions, result: &mut RetentionResult) -> Result<()> {
        let now = self.local.clock().milliseconds();
        self.future_timestamp_warnings(now, 0, options, &mut result.warnings)
    }

    /// [`UnifiedLog::warn_future_timestamps`] at `now`, for the segments from the `skip`-th.
    fn future_timestamp_warnings(
        &self,
        now: i64,
        skip: usize,
        options: RetentionOptions,
        warnings: &mut Vec<String>,
    ) -> Result<()> {
        for segment in self.local.segments().values().iter().skip(skip) {
            let largest = segment.largest_timestamp()?;
            if largest > now {
                let consequence = if options.cap_future_timestamps {
                    "judged by its file's modification time instead (cap_future_timestamps)"
                } else {
                    "retention.ms cannot delete it, or any segment after it, until then"
                };
                warnings.push(format!(
                    "segment {} of {} contains future timestamps (largest {largest}, {} ms ahead); {consequence}",
                    segment.base_offset(),
                    self.topic_partition,
                    largest - now
                ));
            }
        }
        Ok(())
    }

    fn delete_breached(
        &self,
        reason: RetentionReason,
        options: RetentionOptions,
        result: &mut RetentionResult,
    ) -> Result<()> {
        let config = self.config();
        let now = self.local.clock().milliseconds();
        let size = self.size_in_bytes() as i64;
        let Some(mut check) = BreachCheck::new(reason, &config, now, self.log_start_offset(), size, options) else {
            return Ok(());
        };
        let mut predicate = |segment: &LogSegment, next: Option<&Arc<LogSegment>>| check.breached(segment, next);
        let deletable = self.deletable_segments(0, &mut predicate)?;
        if deletable.is_empty() {
            return Ok(());
        }
        let mut deleted = Vec::with_capacity(deletable.len());
        for (segment, next_offset) in &deletable {
            deleted.push(DeletedSegment {
                base_offset: segment.base_offset(),
                next_offset: *next_offset,
                size: segment.size(),
                largest_timestamp: segment.largest_timestamp()?,
                reason,
            });
        }
        self.log_deletion_reason(reason, &deletable, options)?;
        let segments: Vec<_> = deletable.into_iter().map(|(s, _)| s).collect();
        self.delete_segments(&segments, reason)?;
        result.deleted.extend(deleted);
        Ok(())
    }

    /// The INFO lines Kafka's `SegmentDeletionReason.logReason` writes before the segments go:
    /// one per segment for `retention.ms` (and whether its largest record timestamp or its
    /// file's modification time was judged) and `retention.bytes` (and the log size after it),
    /// one for all of them for a log start offset breach. Each names the segment as Kafka's
    /// `LogSegment.toString` does, with its file.
    fn log_deletion_reason(
        &self,
        reason: RetentionReason,
        deletable: &[(Arc<LogSegment>, i64)],
        options: RetentionOptions,
    ) -> Result<()> {
        if !log::log_enabled!(log::Level::Info) {
            return Ok(());
        }
        let config = self.config();
        let prefix = format!("[UnifiedLog partition={}, dir={}]", self.topic_partition, self.dir().display());
        match reason {
            RetentionReason::LogStartOffsetBreach => {
                let all: Result<Vec<String>> = deletable.iter().map(|(s, _)| describe_segment(s)).collect();
                log::info!(
                    "{prefix} Deleting segments due to log start offset {} breach: {}",
                    self.log_start_offset(),
                    all?.join(", ")
                );
            }
            RetentionReason::RetentionSizeBreach => {
                let mut size = self.size_in_bytes() as i64;
                for (segment, _) in deletable {
                    size -= segment.size() as i64;
                    log::info!(
                        "{prefix} Deleting segment {} due to log retention size {} breach. Log size after deletion \
                         will be {size}.",
                        describe_segment(segment)?,
                        config.retention_bytes
                    );
                }
            }
            RetentionReason::RetentionMsBreach => {
                let now = self.local.clock().milliseconds();
                for (segment, _) in deletable {
                    let largest = segment.max_timestamp_so_far()?.timestamp;
                    let by_record = largest >= 0 && !(largest > now && options.cap_future_timestamps);
                    let basis = if by_record {
                        "largest record timestamp in the segment"
                    } else {
                        "last modified time of the segment"
                    };
                    log::info!(
                        "{prefix} Deleting segment {} due to log retention time {}ms breach based on the {basis}",
                        describe_segment(segment)?,
                        config.retention_ms
                    );
                }
            }
        }
        Ok(())
    }

    /// What [`UnifiedLog::delete_old_segments_with`] would delete at `now` with the log start at
    /// `log_start` (a tool reading a stopped broker's dir passes its `log-start-offset-checkpoint`
    /// entry), without deleting: each check runs on the segments the earlier ones leave, as the
    /// real run does. Reads only (works on a read-only open).
    ///
    /// # Errors
    /// I/O errors reading segment timestamps.
    pub fn retention_plan(&self, now: i64, log_start: i64, options: RetentionOptions) -> Result<RetentionPlan> {
        self.check_open()?;
        let config = self.config();
        let log_start = self.log_start_offset().max(log_start);
        let mut plan = RetentionPlan { log_start_offset: log_start, ..RetentionPlan::default() };
        let mut reasons = vec![RetentionReason::LogStartOffsetBreach];
        if config.delete() {
            reasons.extend([RetentionReason::RetentionSizeBreach, RetentionReason::RetentionMsBreach]);
        }
        let (mut skip, mut size) = (0usize, self.size_in_bytes() as i64);
        for reason in reasons {
            if reason == RetentionReason::RetentionMsBreach && config.retention_ms >= 0 {
                self.future_timestamp_warnings(now, skip, options, &mut plan.warnings)?;
            }
            let Some(mut check) = BreachCheck::new(reason, &config, now, log_start, size, options) else { continue };
            let mut predicate = |segment: &LogSegment, next: Option<&Arc<LogSegment>>| check.breached(segment, next);
            for (segment, next_offset) in self.deletable_segments(skip, &mut predicate)? {
                size -= segment.size() as i64;
                skip += 1;
                plan.would_delete.push(DeletedSegment {
                    base_offset: segment.base_offset(),
                    next_offset,
                    size: segment.size(),
                    largest_timestamp: segment.largest_timestamp()?,
                    reason,
                });
            }
        }
        let segments = self.local.segments().values();
        let high_watermark = self.high_watermark();
        if let Some(last) = plan.would_delete.last() {
            plan.log_start_offset = plan.log_start_offset.max(last.next_offset.min(high_watermark));
        }
        let kept = segments.get(skip).filter(|s| !(skip + 1 == segments.len() && s.size() == 0));
        if let (Some(segment), true) = (kept, config.delete() && config.retention_ms >= 0) {
            let check = BreachCheck::new(RetentionReason::RetentionMsBreach, &config, now, log_start, size, options);
            if let Some(check) = check {
                let at = check.judged_timestamp(segment)?.saturating_add(config.retention_ms).saturating_add(1);
                plan.next_expiry = Some((segment.base_offset(), at));
            }
        }
        Ok(plan)
    }

    /// Kafka's `deletableSegments`: oldest first, while the predicate holds, never a segment
    /// reaching past the high watermark, never an empty last segment. Each comes with the
    /// offset after it. The first `skip` segments are taken as gone already (a dry run's
    /// earlier checks).
    fn deletable_segments(
        &self,
        skip: usize,
        predicate: &mut SegmentPredicate<'_>,
    ) -> Result<Vec<(Arc<LogSegment>, i64)>> {
        let segments = self.local.segments().values();
        let (high_watermark, log_end) = {
            let o = self.offsets.read();
            (o.high_watermark, o.log_end)
        };
        let mut out = Vec::new();
        for (i, segment) in segments.iter().enumerate().skip(skip) {
            let next = segments.get(i + 1);
            let upper_bound = next.map_or(log_end, |n| n.base_offset());
            let last_and_empty = next.is_none() && segment.size() == 0;
            if last_and_empty || high_watermark < upper_bound || !predicate(segment, next)? {
                break;
            }
            out.push((segment.clone(), upper_bound));
        }
        Ok(out)
    }

    /// Kafka's `deleteSegments`: rolls first when every segment goes (a log always has one), moves
    /// the log start offset past the deleted segments, then removes them and their producer
    /// snapshots (renamed `.deleted`, unlinked after `file.delete.delay.ms`).
    fn delete_segments(&self, deletable: &[Arc<LogSegment>], reason: RetentionReason) -> Result<()> {
        let config = self.config();
        let mut doomed = deletable.to_vec();
        if self.local.segments().len() == doomed.len() {
            let new_segment = self.roll_locked(None, &mut self.producer_state.lock())?;
            if doomed.last().is_some_and(|s| s.base_offset() == new_segment.base_offset()) {
                log::warn!(
                    "Empty active segment at {} of {} was deleted and recreated due to {}",
                    new_segment.base_offset(),
                    self.topic_partition,
                    reason.name()
                );
                doomed.pop();
            }
        }
        if let Some(first_kept) =
            self.local.segments().higher_segment(doomed.last().map_or(i64::MIN, |s| s.base_offset()))
        {
            let raised = {
                let mut o = self.offsets.write();
                let new_start = first_kept.base_offset().min(o.high_watermark);
                let raised = new_start > o.log_start;
                if raised {
                    o.log_start = new_start;
                    o.recovery_point = o.recovery_point.max(new_start);
                }
                raised.then_some(new_start)
            };
            if let Some(new_start) = raised {
                log::info!(
                    "[UnifiedLog partition={}, dir={}] Incremented log start offset to {new_start} due to segment deletion",
                    self.topic_partition,
                    self.dir().display()
                );
                // Kafka's maybeIncrementLogStartOffset: the first epoch entry follows.
                self.leader_epoch_cache.truncate_from_start(new_start)?;
                self.on_log_start_offset_incremented(new_start);
            }
        }
        self.local.remove_and_delete_segments(&doomed, &config)?;
        let mut marked = Vec::new();
        {
            let mut psm = self.producer_state.lock();
            for s in deletable {
                marked.extend(psm.remove_and_mark_snapshot_for_deletion(s.base_offset())?);
            }
        }
        self.local.schedule_file_deletion(marked.into_iter().map(|s| s.file().to_path_buf()).collect(), &config)
    }
}

/// A segment as Kafka's `LogSegment.toString` prints it, followed by its `.log` file.
fn describe_segment(segment: &LogSegment) -> Result<String> {
    Ok(format!(
        "LogSegment(baseOffset={}, size={}, lastModifiedTime={}, largestRecordTimestamp={}) {}",
        segment.base_offset(),
        segment.size(),
        segment.last_modified()?,
        segment.max_timestamp_so_far()?.timestamp,
        segment.path().display()
    ))
}
