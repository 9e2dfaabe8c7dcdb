//! What one clean did (Kafka's `CleanerStats`) and the summary block the cleaner logs at INFO.
//!
//! Thread-safety: plain data, owned by the cleaning thread, then handed out as a copy.

use std::time::Instant;

/// Calls `$callback!` with the public counters of [`CleanerStats`], in order, each with its
/// doc: the one list of them. The struct below follows it, and so do the Python class
/// `kafkalog.CleanerStats` (`python/cleaner.rs`) and, through that class, the Spark compact
/// job's schema.
macro_rules! cleaner_stats_fields {
    ($callback:ident) => {
        $callback! {
            /// Bytes of segments recopied (pass 2): Kafka's "Start size".
            bytes_read: u64,
            /// Bytes written to the cleaned segments: Kafka's "End size".
            bytes_written: u64,
            /// Bytes of the dirty section read to build the offset map (pass 1).
            map_bytes_read: u64,
            /// Records read while building the map.
            map_messages_read: u64,
            /// Records read while recopying.
            messages_read: u64,
            /// Records without a key found while recopying; they are dropped.
            invalid_messages_read: u64,
            /// Records written.
            messages_written: u64,
            /// Share of the offset map's slots in use at the end of the clean (0..1).
            buffer_utilization: f64,
            /// Seconds from start to end.
            elapsed_secs: f64,
            /// Seconds from start until the map was built.
            elapsed_index_secs: f64,
            /// Tombstones kept because their delete horizon has not passed (or was just stamped).
            tombstones_retained: u64,
            /// Tombstones removed because their delete horizon passed.
            tombstones_removed: u64,
            /// Batches copied byte for byte (nothing removed, no horizon to set).
            batches_copied_verbatim: u64,
            /// Bytes of batches whose records were all superseded, dropped without being read
            /// (counted in `bytes_read` too).
            bytes_skipped: u64,
            /// Cleaned segments written (one per group).
            segments_written: u64,
            /// Segments the clean left exactly as they were, kept without being rewritten.
            segments_kept: u64,
            /// Milliseconds spent sleeping in the shared throttle.
            throttled_ms: u64,
        }
    };
}
#[cfg_attr(not(feature = "python"), allow(unused_imports))] // used by the Python bindings
pub(crate) use cleaner_stats_fields;

macro_rules! define_cleaner_stats {
    ($( $(#[doc = $doc:literal])* $field:ident: $ty:ty ),* $(,)?) => {
        /// Counters and times of one clean. Mirrors Kafka's `CleanerStats`, plus tombstone and
        /// copy counts Kafka does not report.
        #[derive(Debug, Clone, PartialEq)]
        pub struct CleanerStats {
            $( $(#[doc = $doc])* pub $field: $ty, )*
            /// `throttled_ms` to the nanosecond (the throttle's sleeps are often under 1 ms).
            throttled_ns: u64,
            started: Instant,
        }

        impl CleanerStats {
            /// The public counters' names, in order.
            pub const FIELDS: &'static [&'static str] = &[$(stringify!($field)),*];
        }

        impl Default for CleanerStats {
            fn default() -> Self {
                CleanerStats { $($field: Default::default(),)* throttled_ns: 0, started: Instant::now() }
            }
        }
    };
}
cleaner_stats_fields!(define_cleaner_stats);

macro_rules! define_named_access {
    ($( $(#[doc = $doc:literal])* $field:ident: $ty:ty ),* $(,)?) => {
        impl CleanerStats {
            /// Each public counter's name and value as text, in order (Rust's shortest text that
            /// reads back to the same value): the form `last_clean` keeps on disk.
            pub fn named_values(&self) -> Vec<(&'static str, String)> {
                vec![$((stringify!($field), self.$field.to_string())),*]
            }

            /// Sets the counter `name` from its text. `Ok(false)` for a name this version does
            /// not know (a counter written by a newer kafkalog: skipped).
            ///
            /// # Errors
            /// `name=value` and why, when the text is not a value of the counter's type.
            pub fn set_named(&mut self, name: &str, value: &str) -> std::result::Result<bool, String> {
                match name {
                    $(stringify!($field) => {
                        self.$field = value.parse::<$ty>().map_err(|e| format!("{name}={value}: {e}"))?;
                    })*
                    _ => return Ok(false),
                }
                self.throttled_ns = self.throttled_ms.saturating_mul(1_000_000);
                Ok(true)
            }
        }
    };
}
cleaner_stats_fields!(define_named_access);

fn mb(bytes: f64) -> f64 {
    bytes / (1024.0 * 1024.0)
}

/// Digits with a comma every three from the right (Java's `,` format flag).
fn group_thousands(digits: &str) -> String {
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Kafka's `%,.1f`: one decimal, thousands separated by commas.
fn grouped(v: f64) -> String {
    if !v.is_finite() {
        return if v.is_nan() {
            "NaN".into()
        } else if v > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        };
    }
    let s = format!("{:.1}", v.abs());
    let (int, frac) = s.split_once('.').expect("one decimal");
    format!("{}{}.{frac}", if v < 0.0 { "-" } else { "" }, group_thousands(int))
}

/// Kafka's `%,d`.
fn grouped_int(v: u64) -> String {
    group_thousands(&v.to_string())
}

impl CleanerStats {
    /// Stats whose clock starts now.
    pub fn new() -> Self {
        Self::default()
    }
    /// Counts time the I/O throttle slept.
    pub fn add_throttled(&mut self, slept: std::time::Duration) {
        self.throttled_ns = self.throttled_ns.saturating_add(u64::try_from(slept.as_nanos()).unwrap_or(u64::MAX));
        self.throttled_ms = self.throttled_ns / 1_000_000;
    }
    /// Marks the end of pass 1.
    pub fn index_done(&mut self) {
        self.elapsed_index_secs = self.started.elapsed().as_secs_f64();
    }
    /// Marks the end of the clean.
    pub fn all_done(&mut self) {
        self.elapsed_secs = self.started.elapsed().as_secs_f64();
    }

    /// Adds another pass's counters (for a clean that needed several passes).
    pub fn merge(&mut self, o: &CleanerStats) {
        self.bytes_read += o.bytes_read;
        self.bytes_written += o.bytes_written;
        self.map_bytes_read += o.map_bytes_read;
        self.map_messages_read += o.map_messages_read;
        self.messages_read += o.messages_read;
        self.invalid_messages_read += o.invalid_messages_read;
        self.messages_written += o.messages_written;
        self.buffer_utilization = self.buffer_utilization.max(o.buffer_utilization);
        self.elapsed_index_secs += o.elapsed_index_secs;
        self.elapsed_secs += o.elapsed_secs;
        self.tombstones_retained += o.tombstones_retained;
        self.tombstones_removed += o.tombstones_removed;
        self.batches_copied_verbatim += o.batches_copied_verbatim;
        self.bytes_skipped += o.bytes_skipped;
        self.segments_written += o.segments_written;
        self.segments_kept += o.segments_kept;
        self.throttled_ns = self.throttled_ns.saturating_add(o.throttled_ns);
        self.throttled_ms = self.throttled_ns / 1_000_000;
    }

    /// Kafka's INFO block for one clean (`LogCleaner.CleanerThread.recordStats`), word for word.
    pub fn summary(&self, thread_id: usize, log_name: &str, from: i64, to: i64) -> String {
        let secs = self.elapsed_secs;
        let index_secs = self.elapsed_index_secs;
        let clean_secs = secs - index_secs;
        let read = self.bytes_read as f64;
        let written = self.bytes_written as f64;
        format!(
            "\n\tLog cleaner thread {thread_id} cleaned log {log_name} (dirty section = [{from}, {to}])\n\
             \t{} MB of log processed in {} seconds ({} MB/sec).\n\
             \tIndexed {} MB in {:.1} seconds ({} Mb/sec, {:.1}% of total time)\n\
             \tBuffer utilization: {:.1}%\n\
             \tCleaned {} MB in {:.1} seconds ({} Mb/sec, {:.1}% of total time)\n\
             \tStart size: {} MB ({} messages)\n\
             \tEnd size: {} MB ({} messages)\n\
             \t{:.1}% size reduction ({:.1}% fewer messages)\n",
            grouped(mb(read)),
            grouped(secs),
            grouped(mb(read / secs)),
            grouped(mb(self.map_bytes_read as f64)),
            index_secs,
            grouped(mb(self.map_bytes_read as f64) / index_secs),
            100.0 * index_secs / secs,
            100.0 * self.buffer_utilization,
            grouped(mb(read)),
            clean_secs,
            grouped(mb(read) / clean_secs),
            100.0 * clean_secs / secs,
            grouped(mb(read)),
            grouped_int(self.messages_read),
            grouped(mb(written)),
            grouped_int(self.messages_written),
            100.0 * (1.0 - written / read),
            100.0 * (1.0 - self.messages_written as f64 / self.messages_read as f64),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_in_order() {
        assert_eq!(CleanerStats::FIELDS.len(), 17);
        assert_eq!(CleanerStats::FIELDS[..2], ["bytes_read", "bytes_written"]);
        assert_eq!(CleanerStats::FIELDS[16], "throttled_ms");
        assert_eq!(CleanerStats::default().throttled_ns, 0);
    }

    #[test]
    fn named_values_read_back() {
        let mut s =
            CleanerStats { bytes_read: 7, buffer_utilization: 0.1 + 0.2, throttled_ms: 3, ..CleanerStats::default() };
        s.elapsed_secs = 1e-9;
        let mut back = CleanerStats::default();
        for (name, value) in s.named_values() {
            assert_eq!(back.set_named(name, &value), Ok(true), "{name}");
        }
        assert_eq!(back, CleanerStats { started: back.started, throttled_ns: 3_000_000, ..s });
        assert_eq!(back.set_named("from_the_future", "1"), Ok(false));
        assert!(back.set_named("bytes_read", "-1").unwrap_err().starts_with("bytes_read=-1: "));
    }

    #[test]
    fn java_style_grouping() {
        assert_eq!(grouped(1_234_567.26), "1,234,567.3");
        assert_eq!(grouped(0.04), "0.0");
        assert_eq!(grouped_int(1234), "1,234");
        assert_eq!(grouped_int(12), "12");
    }

    #[test]
    fn summary_has_kafkas_lines() {
        let s = CleanerStats {
            bytes_read: 2 * 1024 * 1024,
            bytes_written: 1024 * 1024,
            messages_read: 2000,
            messages_written: 1000,
            elapsed_secs: 2.0,
            elapsed_index_secs: 1.0,
            map_bytes_read: 1024 * 1024,
            buffer_utilization: 0.5,
            ..CleanerStats::default()
        };
        let text = s.summary(0, "t-0", 5, 10);
        assert!(text.contains("Log cleaner thread 0 cleaned log t-0 (dirty section = [5, 10])"));
        assert!(text.contains("2.0 MB of log processed in 2.0 seconds (1.0 MB/sec)."));
        assert!(text.contains("Buffer utilization: 50.0%"));
        assert!(text.contains("Start size: 2.0 MB (2,000 messages)"));
        assert!(text.contains("50.0% size reduction (50.0% fewer messages)"));
    }
}
