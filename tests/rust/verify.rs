//! `kafkalog verify`'s partition checks (`log::verify::verify_partition`, over
//! `segment::verify`) on segments written by `LogSegment`: a clean one has no findings, and each
//! damage is found at its byte position. No Kafka test: Kafka has no such checker.

use std::path::Path;

use kafkalog::log::verify::verify_partition;
use kafkalog::segment::log_segment::LogSegment;
use kafkalog::segment::verify::{Finding, Severity};
use kafkalog::util::clock::system_clock;

use crate::common::{batches, config, values_batch};

/// Five batches of three records at offsets 0-14 in one segment with an index entry per batch
/// but the first; returns each batch's position and the segment's size.
fn write(dir: &Path) -> (Vec<u64>, u64) {
    let cfg = config(&[("index.interval.bytes", "10"), ("segment.index.bytes", "1500")]);
    let seg = LogSegment::open(dir, 0, &cfg, system_clock(), "", false, false).expect("open segment");
    let mut positions = Vec::new();
    for b in 0..5i64 {
        positions.push(seg.size());
        let bytes = values_batch(b * 3, 1_000 + b, &["a", "b", "c"]);
        let info = batches(&bytes)[0];
        seg.append(info.last_offset, &bytes, 3).expect("append");
    }
    let size = seg.size();
    seg.close().expect("close");
    (positions, size)
}

fn problems(findings: &[Finding]) -> Vec<&Finding> {
    findings.iter().filter(|f| f.severity == Severity::Problem).collect()
}

#[test]
fn a_clean_segment_has_no_findings() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path());
    let check = verify_partition(dir.path(), false, None).unwrap();
    assert!(check.findings.is_empty(), "{:?}", check.findings);
    assert_eq!((check.segment_bases, check.log_end_offset, check.first_damaged_segment), (vec![0], 15, None));
}

#[test]
fn a_partial_last_batch_is_a_note_on_a_live_dir_and_a_problem_at_rest() {
    let dir = tempfile::tempdir().unwrap();
    let (_, size) = write(dir.path());
    let log = dir.path().join(format!("{:020}.log", 0));
    let mut data = std::fs::read(&log).unwrap();
    data.extend_from_slice(&values_batch(15, 1_005, &["d"])[..30]);
    std::fs::write(&log, &data).unwrap();
    let live = verify_partition(dir.path(), true, None).unwrap();
    assert_eq!(live.findings.len(), 1, "{:?}", live.findings);
    assert_eq!((live.findings[0].severity, live.findings[0].position), (Severity::Note, Some(size)));
    let at_rest = verify_partition(dir.path(), false, None).unwrap();
    let found = problems(&at_rest.findings);
    assert_eq!(found.len(), 1, "{:?}", at_rest.findings);
    assert_eq!((found[0].file.clone(), found[0].position), (log, Some(size)));
    assert!(found[0].message.contains("the last 30 bytes do not form a complete record batch"), "{}", found[0].message);
}

#[test]
fn a_crc_failure_is_found_at_its_batch() {
    let dir = tempfile::tempdir().unwrap();
    let (positions, _) = write(dir.path());
    let log = dir.path().join(format!("{:020}.log", 0));
    let mut data = std::fs::read(&log).unwrap();
    data[positions[2] as usize + 70] ^= 0x04; // inside the records, covered by the CRC
    std::fs::write(&log, &data).unwrap();
    let check = verify_partition(dir.path(), false, None).unwrap();
    let found = problems(&check.findings);
    assert_eq!((found[0].file.clone(), found[0].position), (log, Some(positions[2])), "{found:?}");
    assert!(found[0].message.starts_with("invalid record batch"), "{}", found[0].message);
    assert_eq!((check.first_damaged_segment, check.log_end_offset), (Some(0), 6));
}

#[test]
fn an_offset_index_entry_off_a_batch_boundary_is_found() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path());
    let index = dir.path().join(format!("{:020}.index", 0));
    let mut data = std::fs::read(&index).unwrap();
    assert_eq!(data.len(), 4 * 8, "an entry per batch but the first");
    data[8 + 7] ^= 0x01; // entry 1's position, one byte off
    std::fs::write(&index, &data).unwrap();
    let check = verify_partition(dir.path(), false, None).unwrap();
    let found = problems(&check.findings);
    assert_eq!((found[0].file.clone(), found[0].position), (index, Some(8)), "{found:?}");
    assert!(found[0].message.contains("is not the start of a record batch"), "{}", found[0].message);
}

/// A rolled segment's untrimmed index (kafkalog trims it on the flush after the roll; a crash
/// before that flush leaves it preallocated): a note when the next load recovers the segment
/// (at or past the recovery point), a problem below it or with no recovery point.
#[test]
fn an_untrimmed_rolled_index_is_a_note_only_where_the_next_load_recovers() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path());
    // A second, later segment makes the first a rolled one.
    let cfg = config(&[]);
    let seg = LogSegment::open(dir.path(), 15, &cfg, system_clock(), "", false, false).unwrap();
    let bytes = values_batch(15, 2_000, &["d"]);
    seg.append(15, &bytes, 1).unwrap();
    seg.close().unwrap();
    let index = dir.path().join(format!("{:020}.index", 0));
    let entries = std::fs::metadata(&index).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&index).unwrap().set_len(entries + 80).unwrap();

    for (recovery_point, severity) in
        [(None, Severity::Problem), (Some(15), Severity::Problem), (Some(3), Severity::Note)]
    {
        let check = verify_partition(dir.path(), false, recovery_point).unwrap();
        let found: Vec<_> = check.findings.iter().filter(|f| f.file == index).collect();
        assert_eq!(found.len(), 1, "{recovery_point:?}: {:?}", check.findings);
        assert_eq!((found[0].severity, found[0].position), (severity, Some(entries)), "{recovery_point:?}");
        assert!(found[0].message.contains("10 preallocated (all-zero) entries"), "{}", found[0].message);
        assert_eq!(check.first_damaged_segment, (severity == Severity::Problem).then_some(0));
    }
}
