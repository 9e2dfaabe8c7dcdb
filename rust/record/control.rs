//! Control records (Kafka's `ControlRecordType` and `EndTransactionMarker`): the key says what
//! kind of control record it is; COMMIT and ABORT carry the coordinator epoch in the value.

use super::batch::{be_i16, RecordBatch};
use super::default_record::Record;
use crate::error::{Error, Result};

/// Size of an end-transaction marker value: version int16 + coordinator epoch int32.
pub const END_TXN_MARKER_VALUE_SIZE: usize = 6;

/// Kind of a control record, from its key. Mirrors Kafka's `ControlRecordType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ControlRecordType {
    /// End of an aborted transaction.
    Abort,
    /// End of a committed transaction.
    Commit,
    /// KRaft leader change.
    LeaderChange,
    /// KRaft snapshot header.
    SnapshotHeader,
    /// KRaft snapshot footer.
    SnapshotFooter,
    /// KRaft version record.
    KraftVersion,
    /// KRaft voters record.
    KraftVoters,
    /// Any other type id.
    Unknown(i16),
}

impl ControlRecordType {
    /// The type of a control batch's first record, the one a COMMIT / ABORT marker holds;
    /// `None` for a control batch with no record left (a marker whose transaction the cleaner
    /// removed). Kafka's `ControlRecordType.parse` on the batch's first record.
    ///
    /// # Errors
    /// A record that does not decode, or a key too short to hold a control record type.
    pub fn of_batch(batch: &RecordBatch<'_>, scratch: &mut Vec<u8>) -> Result<Option<Self>> {
        let mut kind = None;
        batch.for_each_record(scratch, |r| {
            if kind.is_none() {
                kind = Some(Self::parse_key(r.key)?);
            }
            Ok(())
        })?;
        Ok(kind)
    }

    /// The type id stored in the key.
    pub fn id(self) -> i16 {
        match self {
            ControlRecordType::Abort => 0,
            ControlRecordType::Commit => 1,
            ControlRecordType::LeaderChange => 2,
            ControlRecordType::SnapshotHeader => 3,
            ControlRecordType::SnapshotFooter => 4,
            ControlRecordType::KraftVersion => 5,
            ControlRecordType::KraftVoters => 6,
            ControlRecordType::Unknown(id) => id,
        }
    }

    /// The type for an id.
    pub fn from_id(id: i16) -> Self {
        match id {
            0 => ControlRecordType::Abort,
            1 => ControlRecordType::Commit,
            2 => ControlRecordType::LeaderChange,
            3 => ControlRecordType::SnapshotHeader,
            4 => ControlRecordType::SnapshotFooter,
            5 => ControlRecordType::KraftVersion,
            6 => ControlRecordType::KraftVoters,
            other => ControlRecordType::Unknown(other),
        }
    }

    /// Parses a control record key (`ControlRecordType.parse`): at least 4 bytes, version >= 0.
    pub fn parse_key(key: Option<&[u8]>) -> Result<Self> {
        let key = key.ok_or_else(|| Error::invalid_record("control record has a null key"))?;
        if key.len() < 4 {
            return Err(Error::invalid_record(format!(
                "invalid control record key: {} bytes, at least 4 are required",
                key.len()
            )));
        }
        let version = be_i16(key, 0);
        if version < 0 {
            return Err(Error::invalid_record(format!("invalid version {version} in control record key")));
        }
        Ok(Self::from_id(be_i16(key, 2)))
    }
}

/// A decoded COMMIT or ABORT marker (Kafka's `EndTransactionMarker`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndTransactionMarker {
    /// COMMIT or ABORT.
    pub control_type: ControlRecordType,
    /// The transaction coordinator's epoch.
    pub coordinator_epoch: i32,
}

impl EndTransactionMarker {
    /// Decodes a marker from a control record (`EndTransactionMarker.deserialize`).
    pub fn from_record(record: &Record<'_>) -> Result<Self> {
        let control_type = ControlRecordType::parse_key(record.key)?;
        if !matches!(control_type, ControlRecordType::Commit | ControlRecordType::Abort) {
            return Err(Error::invalid_record(format!(
                "control record of type {control_type:?} is not an end-transaction marker"
            )));
        }
        let value = record.value.ok_or_else(|| Error::invalid_record("end-transaction marker has a null value"))?;
        if value.len() < END_TXN_MARKER_VALUE_SIZE {
            return Err(Error::invalid_record(format!(
                "invalid end-transaction marker value: {} bytes, at least {END_TXN_MARKER_VALUE_SIZE} are required",
                value.len()
            )));
        }
        let version = be_i16(value, 0);
        if version < 0 {
            return Err(Error::invalid_record(format!("invalid version {version} in end-transaction marker")));
        }
        let coordinator_epoch = i32::from_be_bytes(value[2..6].try_into().expect("4 bytes"));
        Ok(EndTransactionMarker { control_type, coordinator_epoch })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::batch::RecordBatch;
    use crate::record::builder::write_end_txn_marker;

    /// DefaultRecordBatchTest.testReadAndWriteControlBatch.
    #[test]
    fn markers_round_trip() {
        for t in [ControlRecordType::Commit, ControlRecordType::Abort] {
            let mut out = Vec::new();
            write_end_txn_marker(&mut out, 7, 1_000, 2, 55, 4, t, 17).unwrap();
            let b = RecordBatch::new(&out).unwrap();
            b.ensure_valid().unwrap();
            assert!(b.is_control() && b.is_transactional());
            assert_eq!(b.base_sequence(), -1);
            let mut scratch = Vec::new();
            let records = b.records(&mut scratch).unwrap();
            assert_eq!(records.len(), 1);
            let m = EndTransactionMarker::from_record(&records[0]).unwrap();
            assert_eq!(m, EndTransactionMarker { control_type: t, coordinator_epoch: 17 });
        }
    }

    #[test]
    fn short_keys_and_values_are_invalid() {
        assert!(ControlRecordType::parse_key(Some(&[0, 0, 1])).is_err());
        assert!(ControlRecordType::parse_key(Some(&[0xff, 0xff, 0, 1])).is_err());
        assert_eq!(ControlRecordType::parse_key(Some(&[0, 1, 0, 9])).unwrap(), ControlRecordType::Unknown(9));
        let r = Record::without_headers(0, 0, Some(&[0, 0, 0, 1]), Some(&[0, 0, 0]), 0);
        assert!(EndTransactionMarker::from_record(&r).is_err());
    }
}
