//! Unit tests of `sink_columns.rs`: columns built in Rust as Arrow lays them out.

use super::*;
use crate::record::arrow::column::tests::BinaryBuffers;
use crate::record::arrow::column::Field;
use crate::record::compression::CompressionType;
use crate::record::records::BatchIter;

const TARGET: SinkTarget<'static> = SinkTarget { topic: "orders", partition: 1, compacted: false };

fn ne32(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_ne_bytes()).collect()
}

fn ne64(v: &[i64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_ne_bytes()).collect()
}

fn field<'a>(name: &str, column: Column<'a>) -> Field<'a> {
    Field { name: name.into(), column }
}

fn batch(fields: Vec<Field<'_>>, len: usize) -> Column<'_> {
    Column::structure(None, fields, len).unwrap()
}

/// Decoded (timestamp, key, value, headers) of every record in `bytes`.
type Decoded = (i64, Option<Vec<u8>>, Option<Vec<u8>>, Vec<(Vec<u8>, Option<Vec<u8>>)>);

fn decode(bytes: &[u8]) -> Vec<Decoded> {
    let mut out = Vec::new();
    let mut scratch = Vec::new();
    for item in BatchIter::new(bytes) {
        let (_, b) = item.unwrap();
        let crate::record::AnyBatch::V2(b) = b else { panic!("v2 expected") };
        b.for_each_record(&mut scratch, |r| {
            let headers = r.headers().map(|(k, v)| (k.to_vec(), v.map(<[u8]>::to_vec))).collect();
            out.push((r.timestamp, r.key.map(<[u8]>::to_vec), r.value.map(<[u8]>::to_vec), headers));
            Ok(())
        })
        .unwrap();
    }
    out
}

fn encode(batch: &Column<'_>, target: &SinkTarget<'_>) -> Result<Vec<u8>> {
    let columns = SinkColumns::new(batch)?;
    let mut p = ProducerBatches::new(CompressionType::None, 16384, 99);
    columns.encode(target, &mut p, &mut Vec::new())?;
    p.finish()
}

#[test]
fn rows_become_the_same_bytes_as_records_pushed_one_by_one() {
    let keys = BinaryBuffers::new(&[Some(b"k0"), None, Some(b"k2")]);
    let values = BinaryBuffers::new(&[Some(b"v0"), Some(b"v1"), None]);
    // headers: row 0 [(a, x), (b, null)], row 1 null, row 2 []
    let hkeys = BinaryBuffers::new(&[Some(b"a"), Some(b"b")]);
    let hvalues = BinaryBuffers::new(&[Some(b"x"), None]);
    let entry = Column::structure(
        None,
        vec![
            field("key", Column::Binary { column: hkeys.slice(0, 2), utf8: true, large: false }),
            field("value", hvalues.column()),
        ],
        2,
    )
    .unwrap();
    let list_offsets = ne32(&[0, 2, 2, 2]);
    let list_bits = [0b101u8];
    let list_validity = Some(Validity::new(&list_bits, 0, 3).unwrap());
    let headers = Column::list(list_validity, Offsets::I32(&list_offsets), entry, 3).unwrap();
    let ts = ne64(&[5_000_999, 0, 7_000_000]); // microseconds; row 1 null
    let ts_bits = [0b101u8];
    let ts = IntColumn::new(Some(Validity::new(&ts_bits, 0, 3).unwrap()), &ts, 8, 3).unwrap();
    let b = batch(
        vec![
            field("key", keys.column()),
            field("value", values.column()),
            field("headers", headers),
            field("timestamp", Column::Timestamp(ts, TimeUnit::Microsecond)),
            field("other", Column::Other { type_name: "float64".into(), len: 3 }),
        ],
        3,
    );
    let bytes = encode(&b, &TARGET).unwrap();
    let mut p = ProducerBatches::new(CompressionType::None, 16384, 99);
    p.push(Some(5000), Some(b"k0"), Some(b"v0"), &[(b"a", Some(b"x")), (b"b", None)]).unwrap();
    p.push(None, None, Some(b"v1"), &[]).unwrap();
    p.push(Some(7000), Some(b"k2"), None, &[]).unwrap();
    assert_eq!(bytes, p.finish().unwrap());
    assert_eq!(decode(&bytes)[1], (99, None, Some(b"v1".to_vec()), vec![]));
}

#[test]
fn sliced_columns_and_a_missing_key_column() {
    let values = BinaryBuffers::new(&[Some(b"skip"), Some(b"one"), Some(b"two"), Some(b"skip")]);
    let value = Column::Binary { column: values.slice(1, 2), utf8: true, large: false };
    let b = batch(vec![field("value", value)], 2);
    let got = decode(&encode(&b, &TARGET).unwrap());
    assert_eq!(
        got.iter().map(|r| (r.1.clone(), r.2.clone().unwrap())).collect::<Vec<_>>(),
        vec![(None, b"one".to_vec()), (None, b"two".to_vec())]
    );
}

#[test]
fn timestamps_of_every_unit_become_milliseconds() {
    for (unit, raw, ms) in [
        (TimeUnit::Second, 3, 3000),
        (TimeUnit::Millisecond, 3, 3),
        (TimeUnit::Microsecond, 3999, 3),
        (TimeUnit::Nanosecond, 3_999_999, 3),
    ] {
        let values = BinaryBuffers::new(&[Some(b"v")]);
        let t = ne64(&[raw]);
        let b = batch(
            vec![
                field("value", values.column()),
                field("timestamp", Column::Timestamp(IntColumn::new(None, &t, 8, 1).unwrap(), unit)),
            ],
            1,
        );
        assert_eq!(decode(&encode(&b, &TARGET).unwrap())[0].0, ms, "{unit:?}");
    }
}

fn error_of(b: &Column<'_>, target: &SinkTarget<'_>) -> String {
    encode(b, target).unwrap_err().to_string()
}

#[test]
fn bad_rows_are_named_by_row_and_column() {
    let values = BinaryBuffers::new(&[Some(b"v"), Some(b"w")]);
    let keys = BinaryBuffers::new(&[Some(b"k"), None]);
    let b = batch(vec![field("key", keys.column()), field("value", values.column())], 2);
    let compacted = SinkTarget { compacted: true, ..TARGET };
    assert_eq!(
        error_of(&b, &compacted),
        "invalid record: row 1 of data, column 'key', is null; a compacted topic (cleanup.policy=compact) needs a key in every record"
    );

    let t = ne64(&[1, -1]);
    let b = batch(
        vec![
            field("value", values.column()),
            field("timestamp", Column::Timestamp(IntColumn::new(None, &t, 8, 2).unwrap(), TimeUnit::Millisecond)),
        ],
        2,
    );
    assert!(
        error_of(&b, &TARGET).starts_with("invalid record: row 1 of data, column 'timestamp', is -1 (Millisecond"),
        "{}",
        error_of(&b, &TARGET)
    );
    let t = ne64(&[i64::MAX / 100]);
    let b = batch(
        vec![
            field("value", values.column()),
            field("timestamp", Column::Timestamp(IntColumn::new(None, &t, 8, 1).unwrap(), TimeUnit::Second)),
        ],
        1,
    );
    assert!(error_of(&b, &TARGET).contains("row 0 of data, column 'timestamp'"));

    let p = ne32(&[1, 2]);
    let b = batch(
        vec![
            field("value", values.column()),
            field("partition", Column::Int32(IntColumn::new(None, &p, 4, 2).unwrap())),
        ],
        2,
    );
    assert_eq!(
        error_of(&b, &TARGET),
        "invalid record: row 1 of data, column 'partition', is 2, but this log is orders-1 (a single log refuses another partition's rows)"
    );
    let topics = BinaryBuffers::new(&[None, Some(b"payments")]);
    let b = batch(
        vec![
            field("value", values.column()),
            field("topic", Column::Binary { column: topics.slice(0, 2), utf8: true, large: false }),
        ],
        2,
    );
    assert!(error_of(&b, &TARGET).contains("row 1 of data, column 'topic', is \"payments\", but this log is orders-1"));
}

#[test]
fn null_header_entries_and_keys_are_refused() {
    static ENTRY_BITS: [u8; 1] = [0b10];
    let values = BinaryBuffers::new(&[Some(b"v"), Some(b"w")]);
    let hkeys = BinaryBuffers::new(&[Some(b"a"), None]);
    let hvalues = BinaryBuffers::new(&[Some(b"x"), Some(b"y")]);
    let entries = |bits: Option<Validity<'static>>| {
        let fields = vec![
            field("key", Column::Binary { column: hkeys.slice(0, 2), utf8: true, large: false }),
            field("value", hvalues.column()),
        ];
        Column::structure(bits, fields, 2).unwrap()
    };
    let offsets = ne32(&[0, 1, 2]);
    let b = batch(
        vec![
            field("value", values.column()),
            field("headers", Column::list(None, Offsets::I32(&offsets), entries(None), 2).unwrap()),
        ],
        2,
    );
    assert_eq!(
        error_of(&b, &TARGET),
        "invalid record: row 1 of data, column 'headers', has a null key in header 0 (Kafka header keys are strings)"
    );
    let bits = Validity::new(&ENTRY_BITS, 0, 2).unwrap();
    let b = batch(
        vec![
            field("value", values.column()),
            field("headers", Column::list(None, Offsets::I32(&offsets), entries(Some(bits)), 2).unwrap()),
        ],
        2,
    );
    assert_eq!(
        error_of(&b, &TARGET),
        "invalid record: row 0 of data, column 'headers', has a null header at position 0"
    );
}

#[test]
fn wrong_types_and_a_missing_value_column_name_the_column() {
    let keys = BinaryBuffers::new(&[Some(b"k")]);
    let n = ne64(&[1]);
    let b = batch(
        vec![field("key", Column::Int64(IntColumn::new(None, &n, 8, 1).unwrap())), field("value", keys.column())],
        1,
    );
    assert_eq!(
        error_of(&b, &TARGET),
        "invalid value int64 for the type of data column 'key': must be binary, string, large_binary or large_string \
         (Spark's Kafka sink columns: key, value, headers, topic, partition, timestamp)"
    );
    let b = batch(vec![field("key", keys.column()), field("values", keys.column())], 1);
    assert!(
        error_of(&b, &TARGET).starts_with("invalid value columns [key, values] for data: must have a 'value' column")
    );
    let b = batch(vec![field("value", keys.column()), field("headers", keys.column())], 1);
    assert!(error_of(&b, &TARGET)
        .starts_with("invalid value binary for the type of data column 'headers': must be list<struct<key: string"));
    let b = batch(vec![field("value", keys.column()), field("value", keys.column())], 1);
    assert!(error_of(&b, &TARGET).contains("two columns named 'value'"));
    let b = batch(vec![field("value", Column::Other { type_name: "string_view".into(), len: 1 })], 1);
    assert!(error_of(&b, &TARGET).starts_with("invalid value string_view for the type of data column 'value'"));
}

#[test]
fn null_typed_columns_are_all_null() {
    let b = batch(
        vec![
            field("key", Column::Null { len: 2 }),
            field("value", Column::Null { len: 2 }),
            field("headers", Column::Null { len: 2 }),
        ],
        2,
    );
    let got = decode(&encode(&b, &TARGET).unwrap());
    assert_eq!(got, vec![(99, None, None, vec![]), (99, None, None, vec![])]);
}

#[test]
fn keys_partition_as_kafka_and_null_keys_round_robin() {
    let keys = BinaryBuffers::new(&[Some(b"customer-42"), None, Some(b""), None, None, Some(b"kafkalog")]);
    let mut out = Vec::new();
    assert_eq!(partitions_for_keys(&keys.column(), 12, 10, &mut out).unwrap(), 1); // 10, 11, 0 taken
                                                                                   // "customer-42" % 12 = 9 and "kafkalog" % 12 = 7 (Kafka 4.3.1), "" % 12 from its murmur2 275646681.
    assert_eq!(out, vec![9, 10, 275_646_681 % 12, 11, 0, 7]);
    let mut sliced = Vec::new();
    partitions_for_keys(&Column::Binary { column: keys.slice(1, 2), utf8: false, large: false }, 7, 0, &mut sliced)
        .unwrap();
    assert_eq!(sliced, vec![0, 2]); // Kafka: "" % 7 = 2
    let mut nulls = Vec::new();
    partitions_for_keys(&Column::Null { len: 3 }, 2, 1, &mut nulls).unwrap();
    assert_eq!(nulls, vec![1, 0, 1]);
    assert!(partitions_for_keys(&keys.column(), 0, 0, &mut nulls).unwrap_err().to_string().contains("num_partitions"));
    let n = ne64(&[1]);
    let e = partitions_for_keys(&Column::Int64(IntColumn::new(None, &n, 8, 1).unwrap()), 3, 0, &mut nulls).unwrap_err();
    assert!(e.to_string().contains("data column 'key'"), "{e}");
}
