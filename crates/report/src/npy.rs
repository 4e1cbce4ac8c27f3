//! `.npy` files (NumPy format 1.0) of f32 matrices: `scorekit embed --output x.npy` and the
//! vectors `scorekit bench --save` keeps.

/// A `.npy` (format 1.0) file of a C-order f32 matrix.
pub fn npy_bytes(rows: &[Vec<f32>], dim: usize) -> Vec<u8> {
    let mut header = format!(
        "{{'descr': '<f4', 'fortran_order': False, 'shape': ({}, {}), }}",
        rows.len(),
        dim
    );
    // Magic (6) + version (2) + length (2) + header, padded with spaces to a multiple of 64, ending in \n.
    let total = 10 + header.len() + 1;
    header.push_str(&" ".repeat((64 - total % 64) % 64));
    header.push('\n');
    let mut out = Vec::with_capacity(10 + header.len() + rows.len() * dim * 4);
    out.extend_from_slice(b"\x93NUMPY\x01\x00");
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    for r in rows {
        for x in r {
            out.extend_from_slice(&x.to_le_bytes());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npy_header_is_aligned() {
        let b = npy_bytes(&[vec![1.0, 2.0], vec![3.0, 4.0]], 2);
        let hlen = u16::from_le_bytes([b[8], b[9]]) as usize;
        assert_eq!((10 + hlen) % 64, 0);
        assert_eq!(b.len(), 10 + hlen + 16);
        assert!(std::str::from_utf8(&b[10..10 + hlen])
            .unwrap()
            .contains("'shape': (2, 2)"));
    }
}
