"""Bad input never crashes Python: corrupt, truncated or random bytes handed to decode_batches or
UnifiedLog.append_batch raise CorruptRecordError (or InvalidRecordError for a well-formed batch
the log refuses) naming a byte position, and leave the log as it was. Every exception pickles
(Spark ships them to the driver), and I/O failures are OSErrors with errno and filename."""

from __future__ import annotations

import errno
import inspect
import os
import pickle
import re
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.util import calc_crc32c

import kafkalog
from kafkalog import UnifiedLog, exceptions
from kafkalog.exceptions import (
    CorruptRecordError,
    InvalidConfigError,
    InvalidRecordError,
    KafkaLogError,
    KafkaLogIOError,
    LogClosedError,
    OffsetOutOfRangeError,
    ReadOnlyLogError,
)

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
BASE_TS = 1_700_000_000_000
POSITION = re.compile(r"position (\d+)")


def build_batch(codec: int = 0, n: int = 3, headers: bool = True) -> bytes:
    """A valid v2 batch as a producer sends it (kafka-python's builder)."""
    b = DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=False,
        producer_id=-1, producer_epoch=-1, base_sequence=-1, batch_size=1 << 20,
    )  # fmt: skip
    for i in range(n):
        hdrs = [("h", b"x"), ("n", None)] if headers else []
        b.append(i, timestamp=BASE_TS + i, key=b"key-%d" % i, value=b"value-%d " % i * 12, headers=hdrs)
    raw = bytes(b.build())
    assert raw[22] & 7 == codec
    return raw


def fix_crc(raw: bytes | bytearray) -> bytes:
    buf = bytearray(raw)
    struct.pack_into(">I", buf, 17, calc_crc32c(bytes(buf[21:])))
    return bytes(buf)


def set_field(raw: bytes, fmt: str, at: int, value: int, *, crc: bool = True) -> bytes:
    buf = bytearray(raw)
    struct.pack_into(fmt, buf, at, value)
    return fix_crc(buf) if crc else bytes(buf)


def flip(raw: bytes, at: int, mask: int = 0x01) -> bytes:
    buf = bytearray(raw)
    buf[at] ^= mask
    return bytes(buf)


def with_trailing_inside(raw: bytes, junk: bytes) -> bytes:
    """Extra bytes after the records, inside the batch (length and CRC updated)."""
    buf = bytearray(raw + junk)
    struct.pack_into(">i", buf, 8, len(buf) - 12)
    return fix_crc(buf)


def truncate_inside(raw: bytes, cut: int) -> bytes:
    """The batch's payload cut short by ``cut`` bytes (length and CRC updated)."""
    buf = bytearray(raw[:-cut])
    struct.pack_into(">i", buf, 8, len(buf) - 12)
    return fix_crc(buf)


GOOD = build_batch()
CORRUPT = (CorruptRecordError,)
REFUSED = (CorruptRecordError, InvalidRecordError)

# name -> (bad batch bytes, exceptions allowed). Each is placed after a good batch, so the position
# named must be the bad batch's, not the buffer start.
BAD_BATCHES = {
    **{f"truncated-at-{k}": (GOOD[:k], CORRUPT) for k in (1, 11, 12, 16, 17, 40, 60, 61, len(GOOD) - 1)},
    "crc-field-flipped": (flip(GOOD, 17), CORRUPT),
    "crc-last-byte-flipped": (flip(GOOD, 20, 0x80), CORRUPT),
    "body-byte-flipped": (flip(GOOD, 75, 0x40), CORRUPT),
    "attributes-flipped-no-crc-fix": (flip(GOOD, 22, 0x08), CORRUPT),
    "record-count--1": (set_field(GOOD, ">i", 57, -1), REFUSED),
    "record-count-min-int": (set_field(GOOD, ">i", 57, -(2**31)), REFUSED),
    "record-count-too-high": (set_field(GOOD, ">i", 57, 5), REFUSED),
    "record-count-too-low": (set_field(GOOD, ">i", 57, 1), REFUSED),
    "record-count-zero": (set_field(GOOD, ">i", 57, 0), REFUSED),
    **{f"unknown-codec-{c}": (set_field(GOOD, ">B", 22, c), CORRUPT) for c in (5, 6, 7)},
    "magic-3": (set_field(GOOD, ">b", 16, 3, crc=False), CORRUPT),
    "magic--1": (set_field(GOOD, ">b", 16, -1, crc=False), CORRUPT),
    "length-below-minimum": (set_field(GOOD, ">i", 8, 5, crc=False), CORRUPT),
    "length-negative": (set_field(GOOD, ">i", 8, -100, crc=False), CORRUPT),
    "garbage-after-records": (with_trailing_inside(GOOD, b"\x00garbage"), CORRUPT),
    "first-record-length-too-long": (set_field(GOOD, ">B", 61, 0x7E), CORRUPT),
    "first-record-length-negative": (set_field(GOOD, ">B", 61, 0x01), CORRUPT),
    **{
        f"{name}-stream-truncated": (truncate_inside(build_batch(cid), 8), CORRUPT)
        for name, cid in CODECS.items()
        if cid
    },
    **{
        f"{name}-stream-start-flipped": (fix_crc(flip(build_batch(cid), 61, 0xFF)), CORRUPT)
        for name, cid in CODECS.items()
        if cid
    },
    # Kafka rejects bytes after a snappy or zstd stream; its gzip and lz4 readers ignore them.
    **{
        f"{name}-garbage-after-stream": (with_trailing_inside(build_batch(CODECS[name]), b"\xde\xad\xbe\xef" * 4), CORRUPT)
        for name in ("snappy", "zstd")
    },
    **{
        f"{name}-count-too-high": (set_field(build_batch(cid), ">i", 57, 4), REFUSED)
        for name, cid in CODECS.items()
        if cid
    },
    **{
        f"{name}-count-too-low": (set_field(build_batch(cid), ">i", 57, 1), REFUSED)
        for name, cid in CODECS.items()
        if cid
    },
}

# Bytes after the last complete batch that do not form one.
TRAILING = {
    "text": b"garbage",
    "zeros-12": b"\x00" * 12,
    "ones-30": b"\xff" * 30,
    "header-only": GOOD[:61],
}


def position_of(exc: BaseException) -> int:
    match = POSITION.search(str(exc))
    assert match, f"message names no position: {exc}"
    return int(match.group(1))


@pytest.mark.parametrize("name", list(BAD_BATCHES))
def test_decode_batches_rejects_bad_batch(name):
    bad, allowed = BAD_BATCHES[name]
    start, end = len(GOOD), len(GOOD) + len(bad)
    with pytest.raises(allowed) as exc:
        kafkalog.decode_batches(GOOD + bad)
    pos = position_of(exc.value)
    assert start <= pos <= end, f"position {pos} is outside the bad batch [{start}, {end}]: {exc.value}"
    # Alone, too.
    with pytest.raises(allowed) as exc:
        kafkalog.decode_batches(bad)
    pos = position_of(exc.value)
    assert 0 <= pos <= len(bad), f"position {pos} is outside the input [0, {len(bad)}]: {exc.value}"


@pytest.mark.parametrize("name", list(BAD_BATCHES))
def test_append_batch_rejects_bad_batch_and_leaves_the_log_alone(tmp_path, name):
    bad, allowed = BAD_BATCHES[name]
    with UnifiedLog.open(tmp_path / "bad-0") as log:
        log.append([(b"k", b"v")])
        before = (log.log_end_offset, log.size_in_bytes, log.high_watermark)
        with pytest.raises(allowed) as exc:
            log.append_batch(bad)
        pos = position_of(exc.value)
        assert 0 <= pos <= len(bad), f"position {pos} is outside the input [0, {len(bad)}]: {exc.value}"
        assert (log.log_end_offset, log.size_in_bytes, log.high_watermark) == before
        # The log still works.
        assert log.append_batch(GOOD).first_offset == 1
        assert [r.offset for r in log.records()] == [0, 1, 2, 3]


def test_append_batch_refuses_a_base_offset_other_than_zero(tmp_path):
    """Kafka's leader append (analyzeAndValidateRecords): a producer's batch comes at base offset
    0. Any other base is an InvalidRecordError naming the partition, the base and the batch's
    position, and nothing of the append is written; a follower append keeps its offsets."""
    moved = set_field(GOOD, ">q", 0, 7, crc=False)  # the base offset is outside the CRC
    with UnifiedLog.open(tmp_path / "base-0") as log:
        log.append([(b"k", b"v")])
        before = (log.log_end_offset, log.size_in_bytes)
        with pytest.raises(InvalidRecordError) as exc:
            log.append_batch(GOOD + moved)
        assert (
            "The baseOffset of the record batch in the append to base-0 should be 0, but it is 7"
            f" (batch at position {len(GOOD)} of the append)"
        ) in str(exc.value)
        assert (log.log_end_offset, log.size_in_bytes) == before
        assert log.append_as_follower(set_field(GOOD, ">q", 0, 1, crc=False)).first_offset == 1
        assert log.log_end_offset == 4


@pytest.mark.parametrize("name", list(TRAILING))
def test_garbage_after_the_last_batch(tmp_path, name):
    data = GOOD + build_batch(3) + TRAILING[name]
    valid = len(GOOD) + len(build_batch(3))
    # The position named is where the bytes that are not a batch start, or a field of them.
    with pytest.raises(CorruptRecordError) as exc:
        kafkalog.decode_batches(data)
    assert valid <= position_of(exc.value) < len(data), str(exc.value)
    with UnifiedLog.open(tmp_path / "trail-0") as log:
        with pytest.raises(CorruptRecordError) as exc:
            log.append_batch(data)
        assert valid <= position_of(exc.value) < len(data), str(exc.value)
        assert log.log_end_offset == 0 and log.size_in_bytes == 0


def test_valid_input_decodes():
    # The fixtures above are corrupt only where intended.
    assert len(kafkalog.decode_batches(GOOD + build_batch(3) + build_batch(4))) == 9
    assert kafkalog.decode_batches(b"") == []
    for name, cid in CODECS.items():
        assert [r[0] for r in kafkalog.decode_batches(build_batch(cid))] == [0, 1, 2], name


# -- random bytes --------------------------------------------------------------------------------


def check_decode(data: bytes) -> None:
    try:
        out = kafkalog.decode_batches(data)
    except (CorruptRecordError, InvalidRecordError) as exc:
        assert 0 <= position_of(exc) <= len(data), str(exc)
    else:
        assert isinstance(out, list)


@given(st.binary(max_size=400))
@settings(max_examples=300)
def test_random_bytes_never_crash_decode(data):
    check_decode(data)


@given(st.binary(min_size=49, max_size=300))
@settings(max_examples=200)
def test_random_bytes_behind_a_plausible_header_never_crash_decode(body):
    # A header that frames the random body as one v2 batch (right length, magic 2, valid CRC), so
    # the decoder gets past framing and CRC into attributes, counts, varints and codecs.
    buf = bytearray(12 + len(body))
    struct.pack_into(">qiib", buf, 0, 0, len(buf) - 12, 0, 2)
    buf[17:] = b"\x00\x00\x00\x00" + body[4:]
    check_decode(fix_crc(buf))


MUTATION_BASES = [build_batch(cid, n=4) for cid in CODECS.values()] + [build_batch(0, n=2, headers=False)]


@st.composite
def mutated_batch(draw):
    raw = bytearray(draw(st.sampled_from(MUTATION_BASES)))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(raw) - 1))
        raw[at] = draw(st.integers(0, 255))
    if draw(st.booleans()):
        cut = draw(st.integers(0, len(raw)))
        raw = raw[:cut]
    if len(raw) >= 21 and draw(st.booleans()):
        raw = bytearray(fix_crc(raw))
    return bytes(raw)


@given(mutated_batch())
@settings(max_examples=300)
def test_mutated_batches_never_crash_decode(data):
    check_decode(data)


@given(mutated_batch())
@settings(max_examples=150)
def test_mutated_batches_never_crash_append(tmp_path_factory, data):
    with UnifiedLog.open(tmp_path_factory.mktemp("fuzz") / "fuzz-0") as log:
        try:
            info = log.append_batch(data)
        except (CorruptRecordError, InvalidRecordError, kafkalog.RecordBatchTooLargeError) as exc:
            assert (log.log_end_offset, log.size_in_bytes) == (0, 0)
            if not isinstance(exc, kafkalog.RecordBatchTooLargeError):
                assert 0 <= position_of(exc) <= len(data), str(exc)
        else:
            # Accepted: it must read back as what was appended.
            assert log.log_end_offset == info.last_offset + 1
            assert len(list(log.records())) == info.record_count
            assert log.to_arrow().num_rows == info.record_count


# -- exceptions pickle ----------------------------------------------------------------------------


def exception_classes():
    return [getattr(exceptions, name) for name in exceptions.__all__]


def test_exception_hierarchy():
    classes = exception_classes()
    assert len(classes) >= 14
    # Every exception class the module defines is exported.
    defined = {n for n, c in inspect.getmembers(exceptions, inspect.isclass) if c.__module__ == exceptions.__name__}
    assert defined == set(exceptions.__all__)
    for cls in classes:
        assert issubclass(cls, KafkaLogError)
        # Importable by name, so pickle (and Spark) can find the class again.
        assert cls.__module__ == "kafkalog.exceptions"
        assert getattr(kafkalog.exceptions, cls.__name__) is cls
    assert issubclass(InvalidConfigError, ValueError)
    assert issubclass(KafkaLogIOError, OSError)
    # Errors in the caller's arguments are ValueErrors or TypeErrors too (issue 12).
    for cls in (
        exceptions.InvalidArgumentError,
        exceptions.UnsupportedIsolationError,
        exceptions.InvalidTopicError,
        OffsetOutOfRangeError,
    ):
        assert issubclass(cls, ValueError), cls
    assert issubclass(exceptions.InvalidArgumentTypeError, TypeError)
    assert issubclass(exceptions.UnsupportedIsolationError, exceptions.InvalidArgumentError)
    assert issubclass(exceptions.OffsetOverflowError, exceptions.InvalidOffsetError)
    for name in ("CorruptRecordError", "OffsetOutOfRangeError", "InvalidConfigError", "LogClosedError"):
        assert getattr(kafkalog, name) is getattr(exceptions, name)


def roundtrip(exc: BaseException, protocol: int) -> BaseException:
    back = pickle.loads(pickle.dumps(exc, protocol=protocol))
    assert type(back) is type(exc)
    assert back.args == exc.args
    assert str(back) == str(exc)
    if isinstance(exc, OSError):
        assert isinstance(back, OSError)
        assert (back.errno, back.strerror, back.filename) == (exc.errno, exc.strerror, exc.filename)
    return back


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
@pytest.mark.parametrize("cls", exception_classes(), ids=lambda c: c.__name__)
def test_every_exception_class_pickles(cls, protocol):
    if issubclass(cls, OSError):
        exc = cls(errno.ENOENT, "I/O error during open on /data/orders-0: not found", "/data/orders-0")
    else:
        exc = cls("corrupt record batch in /data/orders-0/00000000000000000000.log at position 61: x")
    roundtrip(exc, protocol)


def raised_by_the_engine(tmp_path) -> list[BaseException]:
    """Real exceptions as the native code raises them."""
    caught: list[BaseException] = []

    def catch(fn):
        try:
            fn()
        except KafkaLogError as exc:
            caught.append(exc)
        else:
            raise AssertionError(f"{fn} did not raise")

    catch(lambda: kafkalog.decode_batches(flip(GOOD, 17)))
    catch(lambda: UnifiedLog.open(tmp_path / "cfg-0", {"segment.bytes": 10}))
    (tmp_path / "file").write_text("x")
    catch(lambda: UnifiedLog.open(tmp_path / "file" / "orders-0"))
    log = UnifiedLog.open(tmp_path / "orders-0")
    log.append([(b"k", b"v")])
    catch(lambda: log.read(5))
    catch(lambda: log.truncate_fully_and_start_at(-1))
    catch(lambda: log.append([kafkalog.Record(b"k", b"v", headers=((b"h", b"x"),))]))  # type: ignore[arg-type]
    catch(lambda: log.append_batch(set_field(GOOD, ">i", 57, 7)))
    with UnifiedLog.open(tmp_path / "orders-0", read_only=True) as ro:
        catch(lambda: ro.append([(b"k", b"v")]))
    log.close()
    catch(lambda: log.read(0))
    kinds = [type(e) for e in caught]
    assert kinds == [
        CorruptRecordError,
        InvalidConfigError,
        KafkaLogIOError,
        OffsetOutOfRangeError,
        exceptions.InvalidArgumentError,
        exceptions.InvalidArgumentTypeError,
        InvalidRecordError,
        ReadOnlyLogError,
        LogClosedError,
    ]
    return caught


def test_exceptions_raised_by_the_engine_pickle(tmp_path):
    for exc in raised_by_the_engine(tmp_path):
        for protocol in (2, pickle.HIGHEST_PROTOCOL):
            back = roundtrip(exc, protocol)
            assert isinstance(back, KafkaLogError)


# -- I/O errors ----------------------------------------------------------------------------------


def test_open_under_a_regular_file_is_an_os_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    path = blocker / "orders-0"
    with pytest.raises(OSError) as exc:
        UnifiedLog.open(path)
    assert isinstance(exc.value, KafkaLogIOError)
    assert exc.value.errno == errno.ENOTDIR
    assert exc.value.filename == os.fspath(path)
    assert os.strerror(errno.ENOTDIR) in str(exc.value) or "Not a directory" in str(exc.value)


def test_open_where_the_partition_dir_is_a_file(tmp_path):
    path = tmp_path / "orders-0"
    path.write_text("a file, not a log")
    with pytest.raises(OSError) as exc:
        UnifiedLog.open(path)
    assert exc.value.errno in (errno.EEXIST, errno.ENOTDIR)
    assert exc.value.filename == os.fspath(path)
    with pytest.raises(OSError) as exc:
        UnifiedLog.open(path, read_only=True)
    assert exc.value.errno in (errno.ENOENT, errno.ENOTDIR)
    assert exc.value.filename == os.fspath(path)
    assert path.read_text() == "a file, not a log"


def test_read_only_open_of_missing_directory(tmp_path):
    path = tmp_path / "missing-0"
    with pytest.raises(OSError) as exc:
        UnifiedLog.open(path, read_only=True)
    assert isinstance(exc.value, KafkaLogIOError)
    assert exc.value.errno == errno.ENOENT
    assert exc.value.filename == os.fspath(path)
    assert not path.exists()


def test_segment_path_that_is_a_directory(tmp_path):
    path = tmp_path / "orders-0"
    (path / "00000000000000000000.log").mkdir(parents=True)
    with pytest.raises(OSError) as exc:
        UnifiedLog.open(path)
    assert exc.value.errno == errno.EISDIR
    assert exc.value.filename == os.fspath(path / "00000000000000000000.log")
