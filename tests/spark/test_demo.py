"""`make demo`'s pipeline (kafkalog.demo.run), small, on the shared Spark session: a fresh run
verifies and reports consistent numbers and a valid PNG; --append adds a round and verifies all
rounds; a fresh run after that starts over; and the verification fails when the log is tampered
with. The topic is also checked here against the generated events, collected to pyarrow and
compared with the partitions read by UnifiedLog (not by the demo's verification, whose
expectation takes another route), so a verification that passed everything would not go
unnoticed."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pyarrow as pa
import pytest

import kafkalog
from kafkalog import demo, demo_events

pytestmark = pytest.mark.spark

SMALL = {"events": 20_000, "keys": 2_000, "partitions": 3, "segment_bytes": 100_000}


def test_help_documents_the_options_and_what_a_rerun_does(capsys):
    with pytest.raises(SystemExit) as exit_info:
        demo.main(["--help"])
    assert exit_info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for option in ("--data-dir", "--events", "--keys", "--partitions", "--delete-ratio", "--picture PATH", "--append"):
        assert option in text
    assert "starts fresh" in text and "every round so far" in text


@pytest.fixture(scope="module")
def fresh(spark, tmp_path_factory) -> tuple[Path, demo.DemoSummary]:
    data = tmp_path_factory.mktemp("demo") / "data"
    return data, demo.run(spark, data, **SMALL)


def copy_of(data: Path, tmp_path: Path) -> Path:
    target = tmp_path / "copy"
    shutil.copytree(data, target)
    return target


def generated(spark, data: Path) -> pa.Table:
    """Every round's events (columns seq, key, value), generated again from demo-state.json, by seq."""
    state = json.loads((data / "demo-state.json").read_text())
    tables = [demo_events.generate(spark, rnd, state["partitions"]).select("seq", "key", "value").toArrow()
              for rnd in state["rounds"]]
    return pa.concat_tables(tables).sort_by("seq")


def latest(spark, data: Path) -> tuple[dict[bytes, bytes | None], dict[bytes, bytes | None], dict[bytes, str]]:
    """The latest value per key in the generated events (by seq) and in the topic (by offset,
    each partition read with UnifiedLog), and each key's partition dir."""
    inp = generated(spark, data).to_pydict()
    expected = {k.encode(): None if v is None else v.encode() for k, v in zip(inp["key"], inp["value"])}
    actual: dict[bytes, bytes | None] = {}
    where: dict[bytes, str] = {}
    for path in sorted(p for p in (data / "logs").iterdir() if p.is_dir()):  # not .lock, the checkpoint
        with kafkalog.UnifiedLog.open(path, read_only=True) as log:
            table = log.to_arrow()
        for key, value in zip(table["key"].to_pylist(), table["value"].to_pylist()):
            actual[key], where[key] = value, str(path)
    return expected, actual, where


def assert_topic_matches_input(spark, data: Path) -> None:
    expected, actual, _ = latest(spark, data)
    live = {k: v for k, v in expected.items() if v is not None}
    assert {k: v for k, v in actual.items() if v is not None} == live
    assert set(actual) <= set(expected)


def test_fresh_run_verifies_and_its_numbers_agree(spark, fresh):
    data, s = fresh
    v = s.verification
    assert (s.round, s.events, s.total_events, s.partitions) == (1, 20_000, 20_000, 3)
    assert [st.name for st in s.steps] == ["Spark: generate", "kafkalog: write", "kafkalog: compact", "kafkalog: read",
                                           "Spark: verify"]
    assert all(st.seconds > 0 and st.records > 0 and st.bytes > 0 for st in s.steps)
    generate, write, compact, read, verify = s.steps
    assert generate.records == write.records == compact.records == 20_000
    assert write.bytes == compact.bytes == s.bytes_before and read.bytes == verify.bytes == s.bytes_after
    assert read.records == verify.records == s.records_after
    assert s.kafka is None  # not asked for
    assert s.records_before == 20_000  # every event is one record before the clean
    assert 0 < s.records_after < s.records_before and 0 < s.bytes_after < s.bytes_before
    assert s.record_reduction == pytest.approx(1 - s.records_after / s.records_before)
    assert s.byte_reduction == pytest.approx(1 - s.bytes_after / s.bytes_before)
    assert v.mismatches == 0 and v.duplicates_in_clean == 0 and v.records_read == s.records_after
    assert v.live_keys + v.deleted_keys == v.keys and v.live_keys > 0 and v.deleted_keys > 0
    assert v.tombstones >= v.deleted_keys  # the first clean only stamps their delete horizon
    # Sections add up to each state's bytes; nothing is clean before, nothing dirty after.
    assert sum(x.total for _, x in s.sections_before) == s.bytes_before
    assert sum(x.total for _, x in s.sections_after) == s.bytes_after
    assert all(x.clean == 0 and x.dirty > 0 and x.uncleanable > 0 for _, x in s.sections_before)
    assert all(x.clean > 0 and x.dirty == 0 and x.uncleanable > 0 for _, x in s.sections_after)
    assert sorted(p.name for p in (data / "logs").iterdir() if p.is_dir()) == ["customers-0", "customers-1", "customers-2"]
    assert_topic_matches_input(spark, data)
    expected, _, _ = latest(spark, data)
    assert len(expected) == v.keys
    events = generated(spark, data)
    header_bytes = sum(len(k) + len(v or "") for k, v in demo.HEADERS)
    assert generate.bytes == sum(len(k) + len(v or "") + header_bytes for k, v in
                                 zip(events["key"].to_pylist(), events["value"].to_pylist()))
    table = demo.format_summary(s)
    assert f"{s.record_reduction:.1%}" in table and f"{s.byte_reduction:.1%}" in table and s.picture in table


def test_fresh_run_saves_a_png(fresh):
    data, s = fresh
    assert s.picture == str(data / "compaction.png")
    raw = Path(s.picture).read_bytes()
    assert raw[:8] == b"\x89PNG\r\n\x1a\n" and raw[12:16] == b"IHDR"
    width, height = struct.unpack(">II", raw[16:24])
    assert width >= 800 and height >= 300 and len(raw) > 20_000


def test_append_adds_a_round_and_verifies_all_rounds_then_a_fresh_run_starts_over(spark, fresh, tmp_path):
    data = copy_of(fresh[0], tmp_path)
    with pytest.raises(demo.DemoError, match="partitions"):
        demo.run(spark, data, **{**SMALL, "partitions": 4}, append=True)
    s = demo.run(spark, data, **{**SMALL, "events": 10_000}, picture=tmp_path / "p.png", append=True)
    assert (s.round, s.events, s.total_events) == (2, 10_000, 30_000)
    assert s.records_before == fresh[1].records_after + 10_000
    assert s.verification.mismatches == 0 and s.records_after < s.records_before
    assert (tmp_path / "p.png").stat().st_size > 20_000
    state = json.loads((data / "demo-state.json").read_text())
    assert [r["first_seq"] for r in state["rounds"]] == [0, 20_000]
    assert state["rounds"][1]["start_ms"] >= state["rounds"][0]["start_ms"] + 20_000 * 40
    assert_topic_matches_input(spark, data)

    s = demo.run(spark, data, **{**SMALL, "events": 5_000})
    assert (s.round, s.total_events, s.records_before) == (1, 5_000, 5_000)
    assert len(json.loads((data / "demo-state.json").read_text())["rounds"]) == 1
    assert_topic_matches_input(spark, data)


@pytest.mark.parametrize("tamper", ["stale value", "deleted key revived", "cleaned offset past the active segment"])
def test_verification_fails_when_the_log_is_tampered_with(spark, fresh, tmp_path, tamper):
    data = copy_of(fresh[0], tmp_path)
    expected, _, where = latest(spark, data)
    demo.verify(spark, data)  # untouched, it passes
    if tamper == "cleaned offset past the active segment":
        # The active segment repeats keys of the cleaned section: claimed clean, they are duplicates.
        state_file = data / "demo-state.json"
        state = json.loads(state_file.read_text())
        state["cleaned_to"] = {p: 1 << 40 for p in state["cleaned_to"]}
        state_file.write_text(json.dumps(state))
        with pytest.raises(demo.VerificationError, match=r"^0 of .* keys differ.*; [1-9][0-9,]* keys repeat"):
            demo.verify(spark, data)
        return
    if tamper == "stale value":
        inp = generated(spark, data).to_pydict()
        key, value = next((k.encode(), v.encode()) for k, v in zip(inp["key"], inp["value"])
                          if v is not None and expected[k.encode()] not in (None, v.encode()))
    else:
        key, value = next(k for k, v in expected.items() if v is None and k in where), b'{"id": -1}'
    with kafkalog.UnifiedLog.open(where[key]) as log:  # an ordinary append after the clean
        log.append([(key, value)])
    with pytest.raises(demo.VerificationError, match=f"^1 of .* keys differ.*{key.decode()}"):
        demo.verify(spark, data)


def records(data: Path) -> list[list[tuple]]:
    out = []
    for d in sorted(p for p in (data / "logs").iterdir() if p.is_dir()):
        with kafkalog.UnifiedLog.open(d, read_only=True) as log:
            t = log.to_arrow()
        out.append(list(zip(*(t[c].to_pylist() for c in ("offset", "key", "value", "headers")))))
    return out


def test_two_fresh_runs_end_with_the_same_topic(spark, fresh, tmp_path):
    """The same records at the same offsets after the clean, and the same counts. The bytes
    are not compared: the sink stamps each append with the time, and a cleaned batch that
    holds records of several appends stores their timestamp deltas as varints, whose length
    depends on how far apart the appends ran."""
    one, two = fresh[1], demo.run(spark, tmp_path / "two", **SMALL)
    assert (one.records_before, one.records_after, one.verification) == (
        two.records_before, two.records_after, two.verification)
    assert one.bytes_before == two.bytes_before
    assert records(fresh[0]) == records(tmp_path / "two")
