//! Checking a file against its pins: size, sha256 and git blob id, in one pass over the bytes.

use super::manifest::DataFile;
use sha1::Sha1;
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::Path;

/// What a file's bytes hash to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Digests {
    /// Bytes.
    pub size: u64,
    /// Lowercase hex sha256.
    pub sha256: String,
    /// Git blob id: sha1 of `blob <size>\0` followed by the bytes.
    pub git_blob: String,
}

/// Hash a file once for both pins. The git blob header needs the size first, so it is taken
/// from the open file's metadata (and checked against what was read).
pub fn digests(path: &Path) -> std::io::Result<Digests> {
    let mut file = std::fs::File::open(path)?;
    let size = file.metadata()?.len();
    let mut sha256 = Sha256::new();
    let mut blob = Sha1::new();
    blob.update(format!("blob {size}\0").as_bytes());
    let mut buf = vec![0u8; 1 << 20];
    let mut read = 0u64;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        sha256.update(&buf[..n]);
        blob.update(&buf[..n]);
        read += n as u64;
    }
    if read != size {
        return Err(std::io::Error::other(format!(
            "{} changed while it was hashed ({size} bytes, then {read})",
            path.display()
        )));
    }
    Ok(Digests {
        size,
        sha256: scorekit_report::hex(&sha256.finalize()),
        git_blob: scorekit_report::hex(&blob.finalize()),
    })
}

/// The first pin a file's digests break, as "field: got X, the manifest pins Y"; `recorded` is
/// a sha256 scorekit recorded at an earlier verified pull of a file the manifest pins by blob.
pub fn mismatch(file: &DataFile, got: &Digests, recorded: Option<&str>) -> Option<String> {
    if let Some(size) = file.size {
        if size != got.size {
            return Some(format!(
                "size: got {} bytes, the manifest pins {size}",
                got.size
            ));
        }
    }
    if let Some(s) = &file.sha256 {
        if *s != got.sha256 {
            return Some(format!("sha256: got {}, the manifest pins {s}", got.sha256));
        }
    }
    if let Some(b) = &file.git_blob {
        if *b != got.git_blob {
            return Some(format!(
                "git blob id: got {}, the manifest pins {b}",
                got.git_blob
            ));
        }
    }
    if let Some(r) = recorded {
        if file.sha256.is_none() && r != got.sha256 {
            return Some(format!(
                "sha256: got {}, the first verified pull recorded {r}",
                got.sha256
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_match_git_and_sha256sum() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("abc");
        std::fs::write(&p, b"abc").unwrap();
        let d = digests(&p).unwrap();
        // `printf abc | git hash-object --stdin` and `printf abc | sha256sum`.
        assert_eq!(d.git_blob, "f2ba8f84ab5c1bce84a7b441cb1959cfc7093b7f");
        assert_eq!(
            d.sha256,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let pinned = DataFile {
            path: "abc".into(),
            size: Some(3),
            sha256: None,
            git_blob: Some(d.git_blob.clone()),
        };
        assert_eq!(mismatch(&pinned, &d, None), None);
        assert_eq!(mismatch(&pinned, &d, Some(&d.sha256)), None);
        assert!(mismatch(&pinned, &d, Some(&"0".repeat(64)))
            .unwrap()
            .contains("recorded"));
        let wrong = DataFile {
            git_blob: Some("0".repeat(40)),
            ..pinned
        };
        assert!(mismatch(&wrong, &d, None)
            .unwrap()
            .starts_with("git blob id"));
    }

    /// The shipped manifests' pins agree with the real files: every file of the parts the tests
    /// read (data/test-parts.txt), as the harness pulled them into the test data cache, has the
    /// size, sha256 and git blob id its manifest pins, hashed here again from the bytes. The pull
    /// checked them too; this re-reading holds the manifests to both pins of every such file.
    #[test]
    fn shipped_pins_match_the_pulled_test_data() {
        let mut checked = 0;
        for spec in crate::testdata::parts() {
            let s = crate::select(spec).unwrap();
            let dir = crate::testdata::file(spec, "");
            for f in s.files() {
                let d = digests(&dir.join(&f.path)).unwrap();
                assert_eq!(mismatch(f, &d, None), None, "{spec}: {}", f.path);
                assert!(f.sha256.is_some() && f.git_blob.is_some(), "{}", f.path);
                checked += 1;
            }
        }
        // possible-stories dev/test/endings, grasp (all 10), muse queries, domains and taxonomy,
        // mint tasks and headline.
        assert_eq!(checked, 3 + 10 + (2 + 10 + 1) + (8 + 56));
    }
}
