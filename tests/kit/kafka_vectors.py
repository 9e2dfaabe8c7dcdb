"""Test vectors computed with Apache Kafka 4.3.1's own code, shared by the suites that check
kafkalog's murmur2 partitioning (the Python partitioner, the Rust one behind
``partitions_for_keys``, the Spark sink)."""

# Computed once with Apache Kafka 4.3.1's own code (kafka-clients-4.3.1.jar from
# tests/kit/jvm/.cache/lib, plus slf4j-api): a 15-line Java class printing
# Utils.murmur2(key.getBytes(UTF_8)) and Utils.toPositive(Utils.murmur2(...)) % n.
KAFKA_MURMUR2 = {
    b"": 275646681,
    b"a": -1563381124,
    b"customer-1": 1939597761,
    b"customer-42": -542987495,
    b"hello": 2132663229,
    b"kafkalog": -1239170953,
    b"0123456789abcdef": 1438427052,
    b"the quick brown fox": 2136040129,
    bytes([0xFF, 0x00, 0x80, 0x7F, 0x01]): -315781896,
}
KAFKA_PARTITION = {  # (key, partition count) -> partition, from the same run
    (b"", 7): 2,
    (b"a", 3): 1,
    (b"a", 7): 5,
    (b"customer-1", 7): 3,
    (b"customer-42", 7): 1,
    (b"customer-42", 12): 9,
    (b"hello", 6): 3,
    (b"kafkalog", 6): 1,
    (b"kafkalog", 12): 7,
    (b"0123456789abcdef", 7): 6,
    (b"the quick brown fox", 3): 1,
    (bytes([0xFF, 0x00, 0x80, 0x7F, 0x01]), 7): 6,
}
