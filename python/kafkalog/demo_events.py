"""The demo's change events (:mod:`kafkalog.demo`): a pure function of a round's numbers, so two
runs with the same seed write the same records in the same order.

Every random choice is a hash of (seed, salt, seq) or (seed, salt, customer id) (SplitMix64's
finalizer, :func:`unit`), and event times count from a fixed instant (:data:`EPOCH_MS`), so
nothing depends on the wall clock, on Python's ``random`` or on how Spark schedules its tasks.

Spark generates the events with ``mapInArrow`` over one row per Kafka partition: each task
draws the round's choices (numpy, vectorised), keeps the events whose key Kafka's partitioner
sends to its partition, and builds their columns with Arrow compute (no Python object per
event). So every Kafka partition is in exactly one Spark task, in seq order, without a
shuffle, and the write appends each partition's records from one task in one order: the
partition files come out the same on every run (the sink's append timestamps aside). (pyspark's
``mapInArrow`` wants pandas in the driver, as the demo's dev venv has; matplotlib draws its picture.)

The verification's expectation (:func:`latest_per_key`) comes from the same choices by another
route: the latest seq of each key over all the round's events, then that event's value.

A round is the dict the demo keeps in ``demo-state.json``: ``round``, ``seed``, ``events``,
``keys``, ``delete_ratio``, ``first_seq`` and ``start_ms``. No Spark session is started here.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy and pyarrow are imported where used: numpy's import starts OpenBLAS's threads
    import numpy as np
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["EPOCH_MS", "STEP_MS", "MAX_KEYS", "KEY_FORMAT", "SCHEMA", "generate", "events_of_partition",
           "kafka_partitions", "latest_per_key", "unit", "values"]

#: Event time of a fresh topic's first event: 2025-01-01T00:00:00Z. Later rounds continue after
#: the previous round's last event.
EPOCH_MS = 1_735_689_600_000
STEP_MS = 40  # event time between two changes
KEY_FORMAT = "customer-%07d"
#: Customer ids have seven digits.
MAX_KEYS = 10_000_000
#: The columns :func:`generate` returns (Spark DDL): Kafka's partitioner on the key, Debezium's
#: op (c / u / d), the event time and the JSON row after the change (null for a delete).
SCHEMA = "seq long, key string, partition int, op string, ts_ms long, value string"
#: Events drawn per numpy step (bounds a task's memory whatever the round's size).
_CHUNK = 1 << 20

_FIRST = ("Maria", "James", "Aiko", "Lars", "Fatima", "Chen", "Olga", "Diego", "Amara", "Noah", "Priya", "Tomasz")
_LAST = ("Garcia", "Smith", "Tanaka", "Berg", "Haddad", "Wang", "Ivanova", "Silva", "Okafor", "Novak", "Patel",
         "Kowalski")
_DOMAINS = ("example.com", "mail.example.org", "corp.example.net")
_TIERS = ("bronze", "silver", "gold", "platinum")
_CITIES = (("Lisbon", "PT"), ("Berlin", "DE"), ("Osaka", "JP"), ("Oslo", "NO"), ("Lagos", "NG"), ("Austin", "US"),
           ("Krakow", "PL"), ("Pune", "IN"), ("Lyon", "FR"), ("Toronto", "CA"))

# -- deterministic draws ------------------------------------------------------------------------

_GOLDEN = 0x9E3779B97F4A7C15


def _salt(seed: int, salt: str) -> int:
    return int.from_bytes(hashlib.blake2b(f"{seed}/{salt}".encode(), digest_size=8).digest(), "little")


def _hash(seed: int, salt: str, of: np.ndarray) -> np.ndarray:
    """A 64-bit hash of (seed, salt, value) for each value of ``of`` (integers >= 0)."""
    import numpy as np

    return _mix(of.astype(np.uint64) * np.uint64(_GOLDEN) + np.uint64(_salt(seed, salt)))


def _mix(z: np.ndarray) -> np.ndarray:
    """SplitMix64's finalizer, on uint64 (numpy wraps the products modulo 2^64)."""
    import numpy as np

    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    out: np.ndarray = z ^ (z >> np.uint64(31))
    return out


def unit(seed: int, salt: str, of: np.ndarray) -> np.ndarray:
    """Uniform in [0, 1) for each value of ``of`` (integers >= 0): a hash of (seed, salt, value)."""
    import numpy as np

    return (_hash(seed, salt, of) >> np.uint64(11)).astype(np.float64) * 2.0 ** -53


def _choices(rnd: dict[str, Any], lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(seq, cid, is_delete) of the round's events with seq in [lo, hi). Hot and cold customers:
    the square of a uniform draw favours low ids, as real traffic does."""
    import numpy as np

    seq = np.arange(lo, hi, dtype=np.int64)
    cid = (unit(rnd["seed"], "key", seq) ** 2 * rnd["keys"]).astype(np.int64)
    return seq, cid, unit(rnd["seed"], "delete", seq) < rnd["delete_ratio"]


def _check_keys(rnd: dict[str, Any]) -> None:
    if not 0 < rnd["keys"] <= MAX_KEYS:
        raise ValueError(f"keys must be in [1, {MAX_KEYS:,}] (seven-digit customer ids), not {rnd['keys']:,}")


def _spans(rnd: dict[str, Any]) -> Iterator[tuple[int, int]]:
    first, end = rnd["first_seq"], rnd["first_seq"] + rnd["events"]
    for lo in range(first, end, _CHUNK):
        yield lo, min(lo + _CHUNK, end)


# -- keys and Kafka's partitioner ---------------------------------------------------------------


def _keys(cid: np.ndarray) -> pa.StringArray:
    """``KEY_FORMAT % cid`` for each ``0 <= cid < MAX_KEYS``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    digits = pc.utf8_lpad(pc.cast(pa.array(cid, pa.int64()), pa.string()), 7, "0")
    out = pc.binary_join_element_wise("customer-", digits, "")
    assert isinstance(out, pa.StringArray)
    return out


def kafka_partitions(cid: np.ndarray, partitions: int) -> np.ndarray:
    """The partition Kafka's default partitioner gives the key ``customer-%07d`` of each cid
    (``toPositive(murmur2(key)) % partitions``, computed natively by
    :func:`kafkalog.arrow_write.partitions_for_keys`)."""
    from .arrow_write import partitions_for_keys

    out: np.ndarray = partitions_for_keys(_keys(cid), partitions).to_numpy()
    return out


@lru_cache(maxsize=4)
def _partition_of_cid(keys: int, partitions: int) -> np.ndarray:
    import numpy as np

    return kafka_partitions(np.arange(keys, dtype=np.int64), partitions)


# -- the events -----------------------------------------------------------------------------------


def _pick(options: tuple[str, ...], u: np.ndarray) -> pa.Array:
    import numpy as np
    import pyarrow as pa

    return pa.array(options).take(pa.array((u * len(options)).astype(np.int64)))


def values(rnd: dict[str, Any], seq: np.ndarray, cid: np.ndarray, is_delete: np.ndarray) -> pa.StringArray:
    """The JSON row after each change (seq, cid) of round ``rnd``: a name and email per
    customer, the rest changes with each event; null (a tombstone) for a delete."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    seed = rnd["seed"]
    first, last = _pick(_FIRST, unit(seed, "first", cid)), _pick(_LAST, unit(seed, "last", cid))
    city = (unit(seed, "city", seq) * len(_CITIES)).astype(np.int64)
    balance = _hash(seed, "balance", seq) % np.uint64(5_000_000)
    opt_in = pa.array(np.array(["false", "true"])[(unit(seed, "opt_in", seq) < 0.6).astype(np.int64)])
    cid_s = pc.cast(pa.array(cid), pa.string())

    def num(a: np.ndarray) -> pa.Array:
        return pc.cast(pa.array(a), pa.string())

    # A delete's first piece is null, and so is its whole row (the join's default null handling).
    opening = pc.if_else(pa.array(is_delete), pa.scalar(None, pa.string()), pa.scalar('{"id":'))
    out = pc.binary_join_element_wise(
        opening, cid_s, ',"name":"', first, " ", last, '","email_user":"', pc.utf8_lower(first), ".",
        pc.utf8_lower(last), ".", cid_s, '","email_domain":"', _pick(_DOMAINS, unit(seed, "domain", cid)),
        '","tier":"', _pick(_TIERS, unit(seed, "tier", seq)),
        '","city":"', pa.array([c for c, _ in _CITIES]).take(pa.array(city)),
        '","country":"', pa.array([c for _, c in _CITIES]).take(pa.array(city)),
        '","balance_cents":', num(balance.astype(np.int64)), ',"marketing_opt_in":', opt_in,
        ',"updated_at":', num(_ts_ms(rnd, seq)), ',"lsn":', num(seq), "}", "")
    assert isinstance(out, pa.StringArray)
    return out


def _ts_ms(rnd: dict[str, Any], seq: np.ndarray) -> np.ndarray:
    out: np.ndarray = rnd["start_ms"] + (seq - rnd["first_seq"]) * STEP_MS
    return out


def _ops(rnd: dict[str, Any], cid: np.ndarray, is_delete: np.ndarray) -> pa.StringArray:
    """Debezium's ops of events in seq order: c(reate) for a key's first change in the first
    round or after a delete, u(pdate), d(elete). In later rounds a key's first change is an
    upsert "u". Every event of a key must be among them (one Kafka partition's are)."""
    import numpy as np
    import pyarrow as pa

    order = np.argsort(cid, kind="stable")  # by key, each key's events in seq order
    by_key, deleted = cid[order], is_delete[order]
    first_of_key = np.ones(len(order), dtype=bool)
    first_of_key[1:] = by_key[1:] != by_key[:-1]
    after_delete = np.zeros(len(order), dtype=bool)
    after_delete[1:] = deleted[:-1]
    code = np.where(first_of_key, 0 if rnd["round"] == 1 else 1, np.where(after_delete, 0, 1))
    code = np.where(deleted, 2, code)
    ops = np.empty(len(order), dtype=np.int64)
    ops[order] = code
    out = pa.array(["c", "u", "d"]).take(pa.array(ops))
    assert isinstance(out, pa.StringArray)
    return out


def events_of_partition(rnd: dict[str, Any], partitions: int, partition: int) -> pa.RecordBatch:
    """The round's events whose key goes to Kafka partition ``partition`` of ``partitions``, in
    seq order, with the columns of :data:`SCHEMA`."""
    import numpy as np
    import pyarrow as pa

    _check_keys(rnd)
    owner = _partition_of_cid(rnd["keys"], partitions)
    parts = []
    for lo, hi in _spans(rnd):
        seq, cid, is_delete = _choices(rnd, lo, hi)
        mine = owner[cid] == partition
        parts.append((seq[mine], cid[mine], is_delete[mine]))
    seq, cid, is_delete = (np.concatenate(column) for column in zip(*parts))
    return pa.RecordBatch.from_arrays(
        [pa.array(seq), _keys(cid), pa.array(np.full(len(seq), partition, dtype=np.int32)), _ops(rnd, cid, is_delete),
         pa.array(_ts_ms(rnd, seq)), values(rnd, seq, cid, is_delete)],
        names=["seq", "key", "partition", "op", "ts_ms", "value"])


def generate(spark: SparkSession, rnd: dict[str, Any], partitions: int) -> DataFrame:
    """One round of change events (the columns of :data:`SCHEMA`), one Spark partition per Kafka
    partition, in seq order within each: ``mapInArrow`` over ``spark.range(partitions)``."""
    _check_keys(rnd)
    round_ = dict(rnd)

    def make(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for p in batch.column("id").to_pylist():
                yield events_of_partition(round_, partitions, p)

    return spark.range(0, partitions, numPartitions=partitions).mapInArrow(make, SCHEMA)


def latest_per_key(rounds: list[dict[str, Any]]) -> pa.Table:
    """The latest event of every key over ``rounds`` (seqs increase from round to round), by key:
    columns key (binary), seq and value (binary, null for a delete). The latest seq of each key
    is the last of its draws over all the rounds' events; then the value of that one event is built."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if not rounds:
        raise ValueError("no rounds")
    parts = []
    for i, rnd in enumerate(rounds):
        for lo, hi in _spans(rnd):
            seq, cid, is_delete = _choices(rnd, lo, hi)
            parts.append((cid, seq, is_delete, np.full(len(seq), i, dtype=np.int32)))
    cid, seq, is_delete, rnd_of = (np.concatenate(column) for column in zip(*parts))
    keys, first_from_end = np.unique(cid[::-1], return_index=True)  # sorted keys, each one's last event
    last = len(cid) - 1 - first_from_end
    seq, is_delete, rnd_of = seq[last], is_delete[last], rnd_of[last]
    value = pa.nulls(len(keys), pa.string())
    for i, rnd in enumerate(rounds):
        mine = np.flatnonzero(rnd_of == i)
        if len(mine):
            value = _replace(value, mine, values(rnd, seq[mine], keys[mine], is_delete[mine]))
    return pa.table({"key": pc.cast(_keys(keys), pa.binary()), "seq": pa.array(seq),
                     "value": pc.cast(value, pa.binary())})


def _replace(column: pa.Array, at: np.ndarray, new: pa.Array) -> pa.Array:
    """``column`` with the values at indices ``at`` (increasing) replaced by ``new``."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    index = np.full(len(column), -1, dtype=np.int64)
    index[at] = np.arange(len(at))
    taken = new.take(pa.array(np.where(index >= 0, index, 0)))
    return pc.if_else(pa.array(index >= 0), taken, column)
