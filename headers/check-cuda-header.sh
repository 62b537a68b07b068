#!/usr/bin/env bash
# Proves that headers/cuda_driver.h agrees with the CUDA toolkit's cuda.h:
#  1. every function prototype: cuda.h is included first, then our header in check mode; the compiler
#     rejects any declaration whose type differs from the toolkit's ("conflicting types");
#  2. every constant and enumerator value, and the size of every type we declare: one program prints
#     them compiled against our header, the same program compiled against cuda.h, and the outputs must
#     be identical.
# Usage: headers/check-cuda-header.sh [path/to/cuda.h]. Exit 0: agree; 1: disagree; 77: no toolkit
# or no C compiler here (nothing checked).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cc=${CC:-gcc}
cuda_h=${1:-}
if [ -z "$cuda_h" ]; then
  for c in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda /usr/local/cuda-*/ /opt/cuda /usr; do
    [ -n "$c" ] && [ -f "$c/include/cuda.h" ] && grep -q cuMemAlloc_v2 "$c/include/cuda.h" && { cuda_h="$c/include/cuda.h"; break; }
  done
fi
if [ -z "$cuda_h" ] || ! command -v "$cc" >/dev/null; then
  echo "check-cuda-header: skipped (no CUDA toolkit cuda.h or no C compiler '$cc')"; exit 77
fi
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
inc=$(dirname "$cuda_h")

# 1. prototypes
printf '#include <cuda.h>\n#define DEVICEBRIDGE_CUDA_CHECK\n#include "cuda_driver.h"\nint main(void){return 0;}\n' > "$work/proto.c"
"$cc" -std=c11 -Wall -Werror -I "$inc" -I "$here" -c "$work/proto.c" -o "$work/proto.o"
nfun=$(grep -cE '^CUresult cu[A-Za-z0-9_]+\(' "$here/cuda_driver.h")

# 2. constants and sizes
names=$(grep -oE '^\s*(CU_[A-Z0-9_]+|CUDA_[A-Z0-9_]+)\s*=' "$here/cuda_driver.h" | tr -d ' =' ;
        grep -oE '^#define (CU_[A-Z0-9_]+)' "$here/cuda_driver.h" | awk '{print $2}')
types="CUdevice CUdeviceptr CUcontext CUstream CUevent CUmemoryPool CUipcMemHandle CUipcEventHandle CUresult CUdevice_attribute CUpointer_attribute CUmemorytype CUstream_flags CUevent_flags CUmemPool_attribute CUmemAllocationType CUmemAllocationHandleType CUmemLocationType CUmemLocation CUmemPoolProps CUmemPoolPtrExportData"
# the offsets of the struct fields the library writes (maxSize and usage are left zero, so toolkits before 12.2,
# which lack them, still check)
fields="CUmemLocation.type CUmemLocation.id CUmemPoolProps.allocType CUmemPoolProps.handleTypes CUmemPoolProps.location CUmemPoolProps.win32SecurityAttributes"
{
  echo '#include <stdio.h>'; echo '#include <stddef.h>'; echo '#include HEADER'; echo 'int main(void){'
  for n in $names; do echo "  printf(\"%s=%lld\\n\", \"$n\", (long long)($n));"; done
  for t in $types; do echo "  printf(\"sizeof(%s)=%zu\\n\", \"$t\", sizeof($t));"; done
  for f in $fields; do echo "  printf(\"offsetof(%s)=%zu\\n\", \"$f\", offsetof(${f%%.*}, ${f#*.}));"; done
  echo '  return 0; }'
} > "$work/values.c"
"$cc" -std=c11 -DHEADER='"cuda_driver.h"' -I "$here" "$work/values.c" -o "$work/ours"
"$cc" -std=c11 -DHEADER='<cuda.h>' -I "$inc" "$work/values.c" -o "$work/toolkit"
"$work/ours" > "$work/ours.txt"; "$work/toolkit" > "$work/toolkit.txt"
if ! diff -u "$work/toolkit.txt" "$work/ours.txt"; then
  echo "check-cuda-header: FAILED: values differ from $cuda_h (- toolkit, + ours)"; exit 1
fi
echo "check-cuda-header: OK: $nfun prototypes, $(echo $names | wc -w) constants, $(echo $types | wc -w) type sizes, $(echo $fields | wc -w) field offsets agree with $cuda_h"
