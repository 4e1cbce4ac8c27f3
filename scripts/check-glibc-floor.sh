#!/usr/bin/env bash
# Does a Linux binary start on glibc 2.17 (CentOS 7, Amazon Linux 2, RHEL 8, Ubuntu 20.04, ...)?
# Reads its dynamic symbol versions and NEEDED libraries (readelf, binutils) and fails on
#   - any symbol version newer than GLIBC_2.17 (GLIBC_PRIVATE included),
#   - a NEEDED library outside the allowed list: glibc's own (libc, libm, libdl, libpthread, librt,
#     ld-linux-x86-64), libgcc_s, and with --cuda the CUDA libraries of the CUDA build (libcuda.so.1,
#     the driver; libcublas, libcublasLt, libcurand, libcudart, libnvrtc) and libstdc++,
#   - a binary that is not dynamically linked x86-64 ELF.
#
#   scripts/check-glibc-floor.sh [--cuda] BINARY...
#   GLIBC_FLOOR=2.28 scripts/check-glibc-floor.sh BINARY    # another floor
#
# Prints, per binary, the newest glibc version it references and its NEEDED list. Exit 0: every
# binary is within the floor; 1: a violation (each is printed); 2: usage.
set -euo pipefail
floor=${GLIBC_FLOOR:-2.17}
cuda=0
[ "${1:-}" != --cuda ] || { cuda=1; shift; }
[ $# -ge 1 ] || { echo "usage: $0 [--cuda] BINARY..." >&2; exit 2; }
command -v readelf >/dev/null || { echo "check-glibc-floor: readelf (binutils) is needed" >&2; exit 2; }

allowed='^(libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|ld-linux-x86-64\.so\.2|libgcc_s\.so\.1)$'
[ $cuda = 0 ] || allowed='^(libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|ld-linux-x86-64\.so\.2|libgcc_s\.so\.1|libstdc\+\+\.so\.6|libcuda\.so\.1|libcublas\.so\.[0-9]+|libcublasLt\.so\.[0-9]+|libcurand\.so\.[0-9]+|libcudart\.so\.[0-9]+|libnvrtc\.so\.[0-9]+)$'

# version_gt A B: A > B for dotted numbers.
version_gt() { [ "$1" != "$2" ] && [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | tail -n1)" = "$1" ]; }

bad=0
for bin in "$@"; do
  [ -f "$bin" ] || { echo "check-glibc-floor: no file $bin" >&2; exit 2; }
  header=$(readelf -h "$bin" 2>/dev/null) || { echo "FAIL $bin: not an ELF file" >&2; bad=1; continue; }
  grep -q 'Machine:.*X86-64' <<<"$header" || { echo "FAIL $bin: not x86-64" >&2; bad=1; continue; }
  needed=$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  [ -n "$needed" ] || { echo "FAIL $bin: no NEEDED entries (not dynamically linked?)" >&2; bad=1; continue; }
  # Version names the binary asks for (.gnu.version_r), e.g. GLIBC_2.14, GLIBC_PRIVATE, GCC_3.0.
  versions=$(readelf -V -W "$bin" | sed -n 's/.*Name: \(GLIBC_[A-Z0-9_.]*\).*/\1/p' | sort -u)
  newest=2.0
  for v in $versions; do
    n=${v#GLIBC_}
    if [ "$n" = PRIVATE ]; then
      echo "FAIL $bin: references GLIBC_PRIVATE" >&2; bad=1; continue
    fi
    if version_gt "$n" "$floor"; then
      syms=$(readelf --dyn-syms -W "$bin" | awk -v v="@$v" 'index($8, v) { print $8 }' | sort -u | tr '\n' ' ')
      echo "FAIL $bin: needs $v (> GLIBC_$floor): $syms" >&2
      bad=1
    fi
    version_gt "$n" "$newest" && newest=$n
  done
  for lib in $needed; do
    [[ $lib =~ $allowed ]] || { echo "FAIL $bin: unexpected NEEDED library $lib" >&2; bad=1; }
  done
  echo "$bin: newest glibc symbol version GLIBC_$newest (floor $floor); NEEDED $(echo $needed)"
done
[ $bad = 0 ] || { echo "check-glibc-floor: FAILED" >&2; exit 1; }
echo "check-glibc-floor: OK (nothing newer than GLIBC_$floor)"
