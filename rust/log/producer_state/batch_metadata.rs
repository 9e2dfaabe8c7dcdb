//! The metadata of one batch a producer wrote (Kafka's `BatchMetadata`), kept for the
//! duplicate check and the snapshot.

/// Kafka's `DefaultRecordBatch.decrementSequence`: `sequence - decrement`, wrapping below 0 to
/// `i32::MAX` (sequences wrap from `i32::MAX` to 0).
pub fn decrement_sequence(sequence: i32, decrement: i32) -> i32 {
    if sequence < decrement {
        // Java int arithmetic: `MAX_VALUE - (decrement - sequence) + 1`.
        i32::MAX.wrapping_sub(decrement.wrapping_sub(sequence)).wrapping_add(1)
    } else {
        sequence.wrapping_sub(decrement)
    }
}

/// The last sequence, last offset, offset delta and max timestamp of one batch. Mirrors Kafka's
/// `BatchMetadata`. A plain value (`Copy`), safe to share.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct BatchMetadata {
    /// The batch's last sequence number.
    pub last_seq: i32,
    /// The batch's last offset.
    pub last_offset: i64,
    /// `last_offset - first_offset`.
    pub offset_delta: i32,
    /// The batch's max timestamp.
    pub timestamp: i64,
}

impl BatchMetadata {
    /// A batch's metadata.
    pub fn new(last_seq: i32, last_offset: i64, offset_delta: i32, timestamp: i64) -> Self {
        BatchMetadata { last_seq, last_offset, offset_delta, timestamp }
    }

    /// The batch's first sequence number (wrapping past 0 back to `i32::MAX`).
    pub fn first_seq(&self) -> i32 {
        decrement_sequence(self.last_seq, self.offset_delta)
    }

    /// The batch's first offset.
    pub fn first_offset(&self) -> i64 {
        self.last_offset - i64::from(self.offset_delta)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// DefaultRecordBatchTest.testDecrementSequence (Kafka's wrap rule at `i32::MAX`).
    #[test]
    fn decrement_sequence_wraps_at_int_max() {
        assert_eq!(decrement_sequence(10, 5), 5);
        assert_eq!(decrement_sequence(0, 0), 0);
        assert_eq!(decrement_sequence(0, 1), i32::MAX);
        assert_eq!(decrement_sequence(9, 20), i32::MAX - 10);
    }

    /// ProducerStateManagerTest.testProducerSequenceWithWrapAroundBatchRecord: a batch from
    /// `i32::MAX - 10` to 9 reports its first sequence across the wrap.
    #[test]
    fn first_seq_and_offset_of_a_wrapped_batch() {
        let b = BatchMetadata::new(9, 2020, 20, 0);
        assert_eq!(b.first_seq(), i32::MAX - 10);
        assert_eq!(b.first_offset(), 2000);
    }
}
