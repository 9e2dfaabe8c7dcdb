//! TEMPORARY placeholder until the legacy reader lands (replaced before commit).
use super::compression::CompressionType;
use super::default_record::Record;
use crate::config::TimestampType;
use crate::error::{Error, Result};
#[derive(Clone, Copy, Debug)]
pub struct LegacyEntry<'a> {
    buf: &'a [u8],
}
impl<'a> LegacyEntry<'a> {
    pub fn new(buf: &'a [u8]) -> Result<Self> {
        Err(Error::corrupt(0, format!("legacy {}", buf.len())))
    }
    pub fn bytes(&self) -> &'a [u8] {
        self.buf
    }
    pub fn magic(&self) -> u8 {
        0
    }
    pub fn last_offset(&self) -> i64 {
        0
    }
    pub fn base_offset(&self) -> Result<i64> {
        Ok(0)
    }
    pub fn max_timestamp(&self) -> i64 {
        -1
    }
    pub fn timestamp_type(&self) -> TimestampType {
        TimestampType::CreateTime
    }
    pub fn compression_type(&self) -> Result<CompressionType> {
        Ok(CompressionType::None)
    }
    pub fn ensure_valid(&self) -> Result<()> {
        Ok(())
    }
    pub fn for_each_record<'s, F>(&self, _scratch: &'s mut Vec<u8>, _f: F) -> Result<()>
    where
        'a: 's,
        F: FnMut(Record<'s>) -> Result<()>,
    {
        Ok(())
    }
}
