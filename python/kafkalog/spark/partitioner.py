"""Kafka's default partitioner for keyed records, so a key written through the ``kafkalog``
data source lands in the partition a Kafka producer would choose.

Mirrors ``org.apache.kafka.common.utils.Utils.murmur2`` / ``Utils.toPositive`` and
``BuiltInPartitioner.partitionForKey``: ``toPositive(murmur2(keyBytes)) % numPartitions``.
Pure functions; no pyspark import.
"""

from __future__ import annotations

import struct

__all__ = ["murmur2", "to_positive", "partition_for_key"]

_M = 0x5BD1E995
_SEED = 0x9747B28C
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2``: the 32-bit MurmurHash2 of ``data`` with Kafka's seed, as a
    signed Java int."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    n4 = length // 4
    for k in struct.unpack_from(f"<{n4}I", data) if n4 else ():
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    rest = length & 3
    tail = length & ~3
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_positive(n: int) -> int:
    """Kafka's ``Utils.toPositive``: clears the sign bit (not ``abs``)."""
    return n & 0x7FFFFFFF


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """The partition Kafka's producer picks for a non-null ``key`` (an empty key included)."""
    return to_positive(murmur2(key)) % num_partitions
