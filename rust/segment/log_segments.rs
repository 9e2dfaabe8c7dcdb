//! The ordered set of a log's segments (Kafka's `LogSegments`): a map from base offset to
//! segment with floor / higher / lower lookups.
//!
//! Thread-safety: safe for concurrent readers while one writer adds or removes segments.
//! Readers take a short read lock and clone `Arc`s, so a segment removed from the map stays
//! readable by anyone who already holds it.

use std::collections::BTreeMap;
use std::ops::Bound::{Excluded, Included, Unbounded};
use std::sync::Arc;

use parking_lot::RwLock;

use super::log_segment::LogSegment;

/// A log's segments by base offset. Mirrors Kafka's `LogSegments`.
#[derive(Debug, Default)]
pub struct LogSegments {
    map: RwLock<BTreeMap<i64, Arc<LogSegment>>>,
}

impl LogSegments {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }
    /// Adds (or replaces) the segment at its base offset; returns the previous one there.
    pub fn add(&self, segment: Arc<LogSegment>) -> Option<Arc<LogSegment>> {
        self.map.write().insert(segment.base_offset(), segment)
    }
    /// Removes the segment at `base_offset`.
    pub fn remove(&self, base_offset: i64) -> Option<Arc<LogSegment>> {
        self.map.write().remove(&base_offset)
    }
    /// Adds `new` and removes the segments at `remove` in one step, so a concurrent reader
    /// sees either the old segments or the new ones, never both (the cleaner's swap).
    pub fn replace(&self, new: &[Arc<LogSegment>], remove: &[i64]) {
        let mut map = self.map.write();
        for base in remove {
            map.remove(base);
        }
        for s in new {
            map.insert(s.base_offset(), s.clone());
        }
    }
    /// Removes every segment.
    pub fn clear(&self) -> Vec<Arc<LogSegment>> {
        std::mem::take(&mut *self.map.write()).into_values().collect()
    }
    /// The segment at exactly `base_offset`.
    pub fn get(&self, base_offset: i64) -> Option<Arc<LogSegment>> {
        self.map.read().get(&base_offset).cloned()
    }
    /// Whether a segment starts at `base_offset`.
    pub fn contains(&self, base_offset: i64) -> bool {
        self.map.read().contains_key(&base_offset)
    }
    /// Number of segments.
    pub fn len(&self) -> usize {
        self.map.read().len()
    }
    /// Whether there are no segments.
    pub fn is_empty(&self) -> bool {
        self.map.read().is_empty()
    }
    /// The segment with the largest base offset <= `offset` (the one that would hold it).
    pub fn floor_segment(&self, offset: i64) -> Option<Arc<LogSegment>> {
        self.map.read().range(..=offset).next_back().map(|(_, s)| s.clone())
    }
    /// The segment with the smallest base offset > `offset`.
    pub fn higher_segment(&self, offset: i64) -> Option<Arc<LogSegment>> {
        self.map.read().range((Excluded(offset), Unbounded)).next().map(|(_, s)| s.clone())
    }
    /// The segment with the largest base offset < `offset`.
    pub fn lower_segment(&self, offset: i64) -> Option<Arc<LogSegment>> {
        self.map.read().range(..offset).next_back().map(|(_, s)| s.clone())
    }
    /// The first segment.
    pub fn first_segment(&self) -> Option<Arc<LogSegment>> {
        self.map.read().values().next().cloned()
    }
    /// The last (active) segment.
    pub fn last_segment(&self) -> Option<Arc<LogSegment>> {
        self.map.read().values().next_back().cloned()
    }
    /// All segments in offset order.
    pub fn values(&self) -> Vec<Arc<LogSegment>> {
        self.map.read().values().cloned().collect()
    }
    /// Segments whose base offset lies in `[from, to)`.
    pub fn values_range(&self, from: i64, to: i64) -> Vec<Arc<LogSegment>> {
        if from >= to {
            return Vec::new();
        }
        self.map.read().range((Included(from), Excluded(to))).map(|(_, s)| s.clone()).collect()
    }
    /// Segments that may hold offsets in `[from, to)`: from the floor segment of `from` on.
    pub fn covering(&self, from: i64, to: i64) -> Vec<Arc<LogSegment>> {
        let map = self.map.read();
        let start = map.range(..=from).next_back().map_or(from, |(b, _)| *b);
        map.range((Included(start), Excluded(to.max(start + 1)))).map(|(_, s)| s.clone()).collect()
    }
    /// Base offsets in order.
    pub fn base_offsets(&self) -> Vec<i64> {
        self.map.read().keys().copied().collect()
    }
    /// Total size of the `.log` files.
    pub fn size_in_bytes(&self) -> u64 {
        self.map.read().values().map(|s| s.size()).sum()
    }
}
