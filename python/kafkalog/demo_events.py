"""The demo's change events (:mod:`kafkalog.demo`), as Spark expressions: a pure function of a
round's numbers, so two runs with the same seed write the same records in the same order.

Every random choice is a hash of (seed, seq) or (seed, customer id), and event times count from
a fixed instant (:data:`EPOCH_MS`), so nothing depends on the wall clock, on Python's ``random``
or on how Spark schedules its tasks. The events are generated with ``spark.range`` and built-in
expressions only (no Python rows, no UDF), in one shuffle: a range partitioning by the Kafka
partition each key goes to, so every Kafka partition is in exactly one Spark task, sorted by
seq there. The write then appends each partition's records from one task in one order, and the
partition files come out the same on every run (the sink's append timestamps aside).

The verification's expectation (:func:`latest_per_key`) comes from the same numbers by another
route: the latest seq of each key by a plain aggregation over (seq, customer id, delete), then
that event's value. It needs no copy of the generated events.

A round is the dict the demo keeps in ``demo-state.json``: ``round``, ``seed``, ``events``,
``keys``, ``delete_ratio``, ``first_seq`` and ``start_ms``. No Spark session is started here.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.window import Window

__all__ = ["EPOCH_MS", "STEP_MS", "MAX_KEYS", "KEY_FORMAT", "generate", "latest_per_key", "with_kafka_partition"]

#: Event time of a fresh topic's first event: 2025-01-01T00:00:00Z. Later rounds continue after
#: the previous round's last event.
EPOCH_MS = 1_735_689_600_000
STEP_MS = 40  # event time between two changes
KEY_FORMAT = "customer-%07d"
#: Customer ids have seven digits, so every key has the 16 bytes :func:`with_kafka_partition` hashes.
MAX_KEYS = 10_000_000

_FIRST = ("Maria", "James", "Aiko", "Lars", "Fatima", "Chen", "Olga", "Diego", "Amara", "Noah", "Priya", "Tomasz")
_LAST = ("Garcia", "Smith", "Tanaka", "Berg", "Haddad", "Wang", "Ivanova", "Silva", "Okafor", "Novak", "Patel",
         "Kowalski")
_DOMAINS = ("example.com", "mail.example.org", "corp.example.net")
_TIERS = ("bronze", "silver", "gold", "platinum")
_CITIES = (("Lisbon", "PT"), ("Berlin", "DE"), ("Osaka", "JP"), ("Oslo", "NO"), ("Lagos", "NG"), ("Austin", "US"),
           ("Krakow", "PL"), ("Pune", "IN"), ("Lyon", "FR"), ("Toronto", "CA"))

# -- Kafka's partitioner as a Spark expression ---------------------------------------------------

_M, _SEED, _MASK = 0x5BD1E995, 0x9747B28C, 0xFFFFFFFF


def _mul(x: Column) -> Column:
    """(x * m) mod 2^32 for 0 <= x < 2^32: the product stays below 2^63, a Spark long."""
    return (x * F.lit(_M)).bitwiseAND(F.lit(_MASK))


def _mix_word(k: Column) -> Column:
    """murmur2's mixing of one little-endian 4-byte word into k."""
    k = _mul(k)
    return _mul(k.bitwiseXOR(F.shiftright(k, 24)))


def _prefix_state() -> int:
    """murmur2's state after the key's constant first eight bytes, b"customer"."""
    h = (_SEED ^ 16) & _MASK
    for (k,) in ((int.from_bytes(b"cust", "little"),), (int.from_bytes(b"omer", "little"),)):
        k = (k * _M) & _MASK
        k = ((k ^ (k >> 24)) * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    return h


def with_kafka_partition(df: DataFrame, partitions: int, cid: str = "cid", name: str = "partition") -> DataFrame:
    """``df`` with a column ``name``: the partition Kafka's default partitioner gives the key
    ``customer-%07d`` of column ``cid`` (``toPositive(murmur2(key)) % partitions``, as
    :func:`kafkalog.spark.partitioner.partition_for_key`). murmur2 is unrolled for the key's 16
    bytes, whose first eight are constant, on Spark longs, one select per stage so that no
    stage repeats another's expression. ``0 <= cid < MAX_KEYS``."""
    c = F.col(cid)
    digit = [(F.floor(c / 10 ** (6 - i)) % 10 + 48).cast("long") for i in range(7)]  # ASCII, most significant first
    word2 = F.lit(ord("-")) + digit[0] * (1 << 8) + digit[1] * (1 << 16) + digit[2] * (1 << 24)
    word3 = digit[3] + digit[4] * (1 << 8) + digit[5] * (1 << 16) + digit[6] * (1 << 24)
    k2, k3, h, out = (f"__{name}_{s}" for s in ("k2", "k3", "h", "out"))
    mixed = df.select("*", _mix_word(word2).alias(k2), _mix_word(word3).alias(k3))
    h2 = _mul(F.lit(_prefix_state())).bitwiseXOR(F.col(k2))
    hashed = mixed.select("*", _mul(h2).bitwiseXOR(F.col(k3)).alias(h))
    h13 = _mul(F.col(h).bitwiseXOR(F.shiftright(F.col(h), 13)))
    final = hashed.select("*", h13.alias(out))
    h15 = F.col(out).bitwiseXOR(F.shiftright(F.col(out), 15))
    return final.select(*df.columns, (h15.bitwiseAND(F.lit(0x7FFFFFFF)) % partitions).cast("int").alias(name))


# -- the events -----------------------------------------------------------------------------------


def _unit(seed: int, salt: str, of: Column) -> Column:
    """Uniform in [0, 1), a hash of (of, seed, salt)."""
    return F.pmod(F.xxhash64(of, F.lit(seed), F.lit(salt)), F.lit(1 << 30)) / float(1 << 30)


def _pick(options: tuple[str, ...], u: Column) -> Column:
    return F.element_at(F.array(*map(F.lit, options)), (F.floor(u * len(options)) + 1).cast("int"))


def _choices(spark: SparkSession, rnd: dict[str, Any], slices: int) -> DataFrame:
    """(seq, cid, is_delete) of every event of the round. Hot and cold customers: the square of
    a uniform draw favours low ids, as real traffic does."""
    seed, first = rnd["seed"], rnd["first_seq"]
    seq = F.col("id")
    return spark.range(first, first + rnd["events"], numPartitions=slices).select(
        seq.alias("seq"),
        F.floor(F.pow(_unit(seed, "key", seq), 2) * rnd["keys"]).cast("long").alias("cid"),
        (_unit(seed, "delete", seq) < rnd["delete_ratio"]).alias("is_delete"),
    )


def _key(cid: Column) -> Column:
    """``KEY_FORMAT % cid`` for ``0 <= cid < MAX_KEYS`` (a concat: format_string costs three times as much)."""
    return F.concat(F.lit("customer-"), F.lpad(cid.cast("string"), 7, "0"))


def _value(rnd: dict[str, Any]) -> Column:
    """The JSON row after the change of (seq, cid): a name and email per customer, the rest
    changes with each event; null (a tombstone) for a delete."""
    seed, seq, c = rnd["seed"], F.col("seq"), F.col("cid")
    first_name, last_name = _pick(_FIRST, _unit(seed, "first", c)), _pick(_LAST, _unit(seed, "last", c))
    city = _unit(seed, "city", seq)
    row = F.struct(
        c.alias("id"),
        F.concat_ws(" ", first_name, last_name).alias("name"),
        F.concat_ws(".", F.lower(first_name), F.lower(last_name), c.cast("string")).alias("email_user"),
        _pick(_DOMAINS, _unit(seed, "domain", c)).alias("email_domain"),
        _pick(_TIERS, _unit(seed, "tier", seq)).alias("tier"),
        _pick(tuple(name for name, _ in _CITIES), city).alias("city"),
        _pick(tuple(cc for _, cc in _CITIES), city).alias("country"),
        F.pmod(F.xxhash64(seq, F.lit(seed), F.lit("balance")), F.lit(5_000_000)).alias("balance_cents"),
        (_unit(seed, "opt_in", seq) < 0.6).alias("marketing_opt_in"),
        _ts_ms(rnd).alias("updated_at"),
        seq.alias("lsn"),
    )
    return F.when(F.col("is_delete"), F.lit(None)).otherwise(F.to_json(row))


def _ts_ms(rnd: dict[str, Any]) -> Column:
    start: int = rnd["start_ms"]
    first: int = rnd["first_seq"]
    return F.lit(start) + (F.col("seq") - F.lit(first)) * F.lit(STEP_MS)


def generate(spark: SparkSession, rnd: dict[str, Any], partitions: int, slices: int = 2) -> DataFrame:
    """One round of change events: columns seq, key, partition (Kafka's partitioner on the key,
    over ``partitions``), op (Debezium's c / u / d), ts_ms and value (the JSON row, null for a
    delete). Range-partitioned by ``partition`` (one Spark partition per Kafka partition, see
    below) and sorted by seq within each. ``slices``: the number of tasks drawing the choices (the result does not depend on it)."""
    if not 0 < rnd["keys"] <= MAX_KEYS:
        raise ValueError(f"keys must be in [1, {MAX_KEYS:,}] (seven-digit customer ids), not {rnd['keys']:,}")
    choices = _choices(spark, rnd, slices)
    # Range bounds over twice as many slots as partitions: every partition of about the mean
    # size gets a bound of its own (one Spark task each, plus empty ones); a range never
    # splits one value, so a Kafka partition is never written by two tasks.
    by_partition = with_kafka_partition(choices, partitions).repartitionByRange(2 * partitions, "partition")
    # Debezium's ops: c(reate) for a key's first change in the first round or after a delete,
    # u(pdate), d(elete). In later rounds a key's first change is an upsert "u". The window's
    # clustering (partition, cid) is met by the range partitioning: no second shuffle.
    previous = F.lag("is_delete").over(Window.partitionBy("partition", "cid").orderBy("seq"))
    op = (F.when(F.col("is_delete"), "d").when(previous.isNull(), "c" if rnd["round"] == 1 else "u")
          .when(previous, "c").otherwise("u"))
    ordered = by_partition.select("seq", "cid", "partition", "is_delete", op.alias("op")).sortWithinPartitions("seq")
    return ordered.select("seq", _key(F.col("cid")).alias("key"), "partition", "op", _ts_ms(rnd).alias("ts_ms"),
                          _value(rnd).alias("value"))


def latest_per_key(spark: SparkSession, rounds: list[dict[str, Any]], slices: int = 2) -> DataFrame:
    """The latest event of every key over ``rounds`` (seqs increase from round to round):
    columns key (string), seq and value (null for a delete). The latest seq of each key comes
    from an aggregation of longs over the choices alone (seq * 2 + delete), then the value of
    that one event is built."""
    latest: DataFrame | None = None
    for rnd in rounds:
        last = (_choices(spark, rnd, slices)
                .groupBy("cid").agg(F.max(F.col("seq") * 2 + F.col("is_delete").cast("long")).alias("code"))
                .select("cid", F.floor(F.col("code") / 2).cast("long").alias("seq"),
                        (F.col("code") % 2 == 1).alias("is_delete")))
        events = last.select(_key(F.col("cid")).alias("key"), "seq", _value(rnd).alias("value"))
        latest = events if latest is None else latest.unionByName(events)
    if latest is None:
        raise ValueError("no rounds")
    if len(rounds) == 1:
        return latest
    return latest.groupBy("key").agg(F.max(F.struct("seq", "value")).alias("last")).select(
        "key", "last.seq", "last.value")
