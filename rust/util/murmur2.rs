//! Kafka's default partitioner for keyed records: `Utils.murmur2`, `Utils.toPositive` and
//! `BuiltInPartitioner.partitionForKey` (`toPositive(murmur2(key)) % numPartitions`), so a key
//! lands in the partition a Kafka producer would choose.
//!
//! Pure functions.

const M: u32 = 0x5bd1_e995;
const SEED: u32 = 0x9747_b28c;

/// Kafka's `Utils.murmur2`: the 32-bit MurmurHash2 of `data` with Kafka's seed, as a Java int.
#[inline]
pub fn murmur2(data: &[u8]) -> i32 {
    let mut h = SEED ^ data.len() as u32;
    let mut words = data.chunks_exact(4);
    for w in words.by_ref() {
        let mut k = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> 24;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M) ^ k;
    }
    let rest = words.remainder();
    if rest.len() == 3 {
        h ^= u32::from(rest[2]) << 16;
    }
    if rest.len() >= 2 {
        h ^= u32::from(rest[1]) << 8;
    }
    if !rest.is_empty() {
        h ^= u32::from(rest[0]);
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h as i32
}

/// Kafka's `Utils.toPositive`: clears the sign bit (not `abs`).
#[inline]
pub fn to_positive(n: i32) -> i32 {
    n & 0x7fff_ffff
}

/// The partition Kafka's producer picks for a non-null `key` (an empty key included) among
/// `num_partitions` (which must be positive).
#[inline]
pub fn partition_for_key(key: &[u8], num_partitions: i32) -> i32 {
    to_positive(murmur2(key)) % num_partitions
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Computed with Apache Kafka 4.3.1's own `Utils.murmur2` (the same vectors as
    /// `tests/spark/test_spark_write.py`'s `KAFKA_MURMUR2`).
    const KAFKA_MURMUR2: &[(&[u8], i32)] = &[
        (b"", 275_646_681),
        (b"a", -1_563_381_124),
        (b"customer-1", 1_939_597_761),
        (b"customer-42", -542_987_495),
        (b"hello", 2_132_663_229),
        (b"kafkalog", -1_239_170_953),
        (b"0123456789abcdef", 1_438_427_052),
        (b"the quick brown fox", 2_136_040_129),
        (&[0xff, 0x00, 0x80, 0x7f, 0x01], -315_781_896),
    ];

    /// Kafka's own vectors (UtilsTest.testMurmur2).
    const UTILS_TEST: &[(&[u8], i32)] = &[
        (b"21", -973_932_308),
        (b"foobar", -790_332_482),
        (b"a-little-bit-long-string", -985_981_536),
        (b"a-little-bit-longer-string", -1_486_304_829),
        (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58_897_971),
        (b"abc", 479_470_107),
    ];

    /// `toPositive(murmur2(key)) % n` from the same Kafka run (`KAFKA_PARTITION`).
    const KAFKA_PARTITION: &[(&[u8], i32, i32)] = &[
        (b"", 7, 2),
        (b"a", 3, 1),
        (b"a", 7, 5),
        (b"customer-1", 7, 3),
        (b"customer-42", 7, 1),
        (b"customer-42", 12, 9),
        (b"hello", 6, 3),
        (b"kafkalog", 6, 1),
        (b"kafkalog", 12, 7),
        (b"0123456789abcdef", 7, 6),
        (b"the quick brown fox", 3, 1),
        (&[0xff, 0x00, 0x80, 0x7f, 0x01], 7, 6),
    ];

    /// Kafka's UtilsTest.testMurmur2, and the vectors computed with Kafka's jar.
    #[test]
    fn murmur2_matches_kafka() {
        for (key, hash) in UTILS_TEST.iter().chain(KAFKA_MURMUR2) {
            assert_eq!(murmur2(key), *hash, "{key:?}");
        }
        for (key, n, partition) in KAFKA_PARTITION {
            assert_eq!(partition_for_key(key, *n), *partition, "{key:?} % {n}");
        }
    }

    #[test]
    fn to_positive_clears_only_the_sign_bit() {
        assert_eq!(to_positive(-1), i32::MAX);
        assert_eq!(to_positive(i32::MIN), 0);
        assert_eq!(to_positive(5), 5);
    }
}
