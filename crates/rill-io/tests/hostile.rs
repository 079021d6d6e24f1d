//! Hand-made hostile `.npy` / `.npz` files: each must give one clear error, never a
//! panic, an abort or an allocation sized by an untrusted header.

use rill_io::raw_npy as npy;
use rill_io::{Array, Data, IoError, Npz};

/// CRC-32 (IEEE), bitwise: enough for the few bytes these tests archive.
fn crc32(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in data {
        c ^= b as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0xEDB8_8320
            } else {
                c >> 1
            };
        }
    }
    !c
}

/// One stored (uncompressed) zip member whose headers claim `claimed` bytes
/// (through a zip64 extra field) while `data` is what the file really holds.
fn zip_claiming(name: &str, data: &[u8], claimed: u64) -> Vec<u8> {
    let crc = crc32(data);
    let mut z = Vec::new();
    let le16 = |v: &mut Vec<u8>, x: u16| v.extend_from_slice(&x.to_le_bytes());
    let le32 = |v: &mut Vec<u8>, x: u32| v.extend_from_slice(&x.to_le_bytes());
    let le64 = |v: &mut Vec<u8>, x: u64| v.extend_from_slice(&x.to_le_bytes());
    // Time, date, CRC, both sizes (in the zip64 extra), name and extra lengths.
    let times_crc_sizes = |v: &mut Vec<u8>| {
        le16(v, 0);
        le16(v, 0x21);
        le32(v, crc);
        le32(v, u32::MAX);
        le32(v, u32::MAX);
        le16(v, name.len() as u16);
        le16(v, 20);
    };
    // The name, then the zip64 extra (uncompressed, compressed).
    let name_and_zip64 = |v: &mut Vec<u8>| {
        v.extend_from_slice(name.as_bytes());
        le16(v, 1);
        le16(v, 16);
        le64(v, claimed);
        le64(v, data.len() as u64);
    };
    // Local file header + zip64 extra (uncompressed, compressed).
    le32(&mut z, 0x0403_4b50);
    le16(&mut z, 45);
    le16(&mut z, 0);
    le16(&mut z, 0); // stored
    times_crc_sizes(&mut z);
    name_and_zip64(&mut z);
    z.extend_from_slice(data);
    // Central directory header + zip64 extra (uncompressed, compressed).
    let cd = z.len();
    le32(&mut z, 0x0201_4b50);
    le16(&mut z, 45);
    le16(&mut z, 45);
    le16(&mut z, 0);
    le16(&mut z, 0);
    times_crc_sizes(&mut z);
    le16(&mut z, 0);
    le16(&mut z, 0);
    le16(&mut z, 0);
    le32(&mut z, 0);
    le32(&mut z, 0);
    name_and_zip64(&mut z);
    let cd_len = z.len() - cd;
    // End of central directory.
    le32(&mut z, 0x0605_4b50);
    le16(&mut z, 0);
    le16(&mut z, 0);
    le16(&mut z, 1);
    le16(&mut z, 1);
    le32(&mut z, cd_len as u32);
    le32(&mut z, cd as u32);
    le16(&mut z, 0);
    z
}

/// Writes `bytes` to a fresh file in cargo's temp directory for integration tests.
fn tmp(name: &str, bytes: &[u8]) -> std::path::PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("rill-io-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(format!("{}-{name}", N.fetch_add(1, Ordering::Relaxed)));
    std::fs::write(&p, bytes).unwrap();
    p
}

fn npy_err(bytes: &[u8]) -> String {
    let p = tmp("hostile.npy", bytes);
    let r = rill_io::read_npy(&p);
    std::fs::remove_file(&p).unwrap();
    // The in-memory parser says the same.
    let m = rill_io::npy_from_bytes(&p, bytes).map_err(|e| e.to_string());
    match r {
        Ok(a) => panic!("hostile .npy was accepted: {a:?}"),
        Err(e) => {
            assert!(matches!(e, IoError::Format { .. }), "{e:?}");
            assert_eq!(m, Err(e.to_string()));
            e.to_string()
        }
    }
}

fn npz_err(bytes: &[u8]) -> String {
    let p = tmp("hostile.npz", bytes);
    let r = Npz::read(&p);
    std::fs::remove_file(&p).unwrap();
    assert_eq!(
        r.as_ref().err().map(|e| e.to_string()),
        Npz::from_bytes(&p, bytes).err().map(|e| e.to_string())
    );
    match r {
        Ok(z) => match z.get("a") {
            Ok(a) => panic!("hostile .npz member was accepted: {a:?}"),
            Err(e) => e.to_string(),
        },
        Err(e) => e.to_string(),
    }
}

const F4: &str = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";

#[test]
fn valid_hand_made_files_read() {
    let data: Vec<u8> = [1.5f32, -2.0]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let file = npy(F4, &data);
    let p = tmp("ok.npy", &file);
    let a = rill_io::read_npy(&p).unwrap();
    std::fs::remove_file(&p).unwrap();
    assert_eq!(a, Array::new(vec![2], Data::F32(vec![1.5, -2.0])));
    let zip = zip_claiming("a.npy", &file, file.len() as u64);
    let z = Npz::from_bytes("ok.npz", &zip).unwrap();
    assert_eq!(z.get("a").unwrap(), &a);
}

#[test]
fn tiny_npz_claiming_2_pow_60_bytes_is_an_error() {
    let file = npy(F4, &[0; 8]);
    let e = npz_err(&zip_claiming("a.npy", &file, 1 << 60));
    eprintln!("{e}");
    assert!(e.contains("hostile.npz") && e.contains("a"), "{e}");
}

#[test]
fn npz_member_shorter_or_longer_than_claimed_is_an_error() {
    let file = npy(F4, &[0; 8]);
    for claimed in [file.len() as u64 - 1, file.len() as u64 + 1] {
        let e = npz_err(&zip_claiming("a.npy", &file, claimed));
        eprintln!("{e}");
    }
}

#[test]
fn npy_shape_overflowing_u64_is_an_error() {
    for shape in [
        "(4294967296, 4294967296)",
        "(18446744073709551615, 2)",
        "(0, 4294967296, 4294967296)",
        "(18446744073709551616,)",
        "(-1,)",
    ] {
        let dict = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}");
        let e = npy_err(&npy(&dict, &[0; 16]));
        eprintln!("{shape}: {e}");
        assert!(e.contains("shape"), "{e}");
    }
}

#[test]
fn npy_shape_larger_than_the_data_is_an_error_before_allocating() {
    // 2^40 floats (4 TiB) claimed by a 100-byte file.
    let dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776,), }";
    let e = npy_err(&npy(dict, &[0; 16]));
    eprintln!("{e}");
    assert!(e.contains("truncated"), "{e}");
    let dict = "{'descr': '<f8', 'fortran_order': True, 'shape': (3, 5), }";
    let e = npy_err(&npy(dict, &[0; 8 * 14]));
    assert!(e.contains("120") && e.contains("112"), "{e}");
}

#[test]
fn npy_bad_headers_are_errors() {
    let mut cases: Vec<Vec<u8>> = vec![
        Vec::new(),
        b"\x93NUMPY".to_vec(),
        b"\x93NUMPY\x01\x00\xff\xff{".to_vec(),
        b"\x93NUMPY\x02\x00\xff\xff\xff\xff{".to_vec(),
        b"\x93NUMPY\x09\x00\x00\x00".to_vec(),
        npy("{'descr': '<f4', 'shape': (2,), }", &[0; 8]),
        npy(
            "{'descr': '<f4', 'fortran_order': 1, 'shape': (2,), }",
            &[0; 8],
        ),
        npy(
            "{'descr': '<f9', 'fortran_order': False, 'shape': (2,), }",
            &[0; 8],
        ),
        npy(
            "{'descr': '|O', 'fortran_order': False, 'shape': (2,), }",
            &[0; 16],
        ),
        npy(
            "{'descr': '<f4', 'fortran_order': False, 'shape': 2, }",
            &[0; 8],
        ),
        npy("[1, 2]", &[0; 8]),
        npy(
            "{'descr': '|b1', 'fortran_order': False, 'shape': (1,), }",
            &[7],
        ),
    ];
    // Deeply nested brackets (a recursive parser would overflow its stack).
    let deep = "[".repeat(5000);
    cases.push(npy(&format!("{{'descr': {deep}"), &[]));
    // A header far longer than numpy itself accepts.
    let mut long = b"\x93NUMPY\x02\x00".to_vec();
    long.extend_from_slice(&(1u32 << 20).to_le_bytes());
    long.resize(long.len() + (1 << 20), b' ');
    cases.push(long);
    for c in &cases {
        let e = npy_err(c);
        eprintln!("{e}");
    }
}

#[test]
fn inconsistent_array_is_not_written() {
    let probe = tmp("probe", b"");
    std::fs::remove_file(&probe).unwrap();
    let dir = probe.parent().unwrap();
    let a = Array::new(vec![3, 2], Data::F32(vec![1.0; 5]));
    let e = rill_io::write_npy(dir.join("x.npy"), &a).unwrap_err();
    eprintln!("{e}");
    assert!(
        e.to_string().contains("6") && e.to_string().contains("5"),
        "{e}"
    );
    let huge = Array::new(vec![1 << 40, 1 << 40], Data::U8(vec![]));
    assert_eq!(huge.numel(), usize::MAX);
    assert!(rill_io::write_npy(dir.join("y.npy"), &huge).is_err());
}

/// Found by the `npy` fuzz target: a 200-byte header nesting `{` 8 deep made the
/// Python-literal parser backtrack for seconds per file.
#[test]
fn fuzz_slow_nested_header_is_refused_at_once() {
    let bytes = include_bytes!("data/fuzz-slow-nested-header.npy");
    let e = npy_err(bytes);
    assert!(e.contains("nests brackets deeper than 2"), "{e}");
    // Depth 3 (a shape tuple inside a list inside the dict) is refused the same way;
    // numpy's own depth 2 still reads.
    let e = npy_err(&npy(
        "{'descr': '<f4', 'fortran_order': False, 'shape': [(2,)], }",
        &[0; 8],
    ));
    assert!(e.contains("nests"), "{e}");
    let p = tmp("depth2.npy", &npy(F4, &[0; 8]));
    assert!(rill_io::read_npy(&p).is_ok());
    std::fs::remove_file(&p).unwrap();
}
