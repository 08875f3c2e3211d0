#!/usr/bin/env bash
# Instructions of one inference of a CMSIS-NN archive under QEMU: mlf-build's
# firmware (examples/cortex-m-runner) against the same C (the archive's
# sources plus exactly the CMSIS-NN sources mlf-build compiled) built by plain
# arm-none-eabi-gcc with CMSIS-NN's recommended -Ofast into harness.c.
# Counted from the entry of tvmgen_default_run to its return, callees
# included (insns-in-call.c), so start-up and output code are left out.
#
# usage: examples/buildbench/cmsis-nn/insns.sh [m4f] [m55]   (default: both)
# env: MLF_ARCHIVE, VECTOR, EXPECTED (default: the corpus's etiss-vww-muriscvnn-rvv-tvm017
#      and its random vector), CMSIS_NN_PATH (default: ../shared/third-party/CMSIS-NN/v4.1.0)
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
here=$root/examples/buildbench/cmsis-nn
case_dir=$root/../shared/mlf-corpus/real-world/etiss-vww-muriscvnn-rvv-tvm017
archive=$(realpath "${MLF_ARCHIVE:-$case_dir/model.tar}")
vector=$(realpath "${VECTOR:-$case_dir/vectors/random.bin}")
expected=$(realpath "${EXPECTED:-$case_dir/expected/random.output0.bin}")
cmsis=$(realpath "${CMSIS_NN_PATH:-$root/../shared/third-party/CMSIS-NN/v4.1.0}")
work=$root/target/buildbench/cmsis-nn-insns
mkdir -p "$work"
plugin=$work/libinsns-in-call.so
gcc -O2 -shared -fPIC -o "$plugin" "$here/insns-in-call.c"
rm -rf "$work/archive" && mkdir -p "$work/archive"
if [ -d "$archive" ]; then cp -rT "$archive" "$work/archive"; else tar -xf "$archive" -C "$work/archive"; fi

# Runs ELF on the board; prints "<instructions> <output hex>", failing unless
# the output equals EXPECTED.
count() {
  local elf=$1 board=$2 start calls stop out
  start=$(arm-none-eabi-nm "$elf" | awk '$3 == "tvmgen_default_run" { print $1 }')
  # The one call site; the count stops at the instruction after its 4-byte `bl`.
  calls=$(arm-none-eabi-objdump -d "$elf" | grep -E $'^ *[0-9a-f]+:\t[0-9a-f ]+\tbl\t[0-9a-f]+ <tvmgen_default_run>$' || true)
  [ "$(grep -c . <<<"$calls")" = 1 ] || { echo "$elf: not one \`bl tvmgen_default_run\`:" "$calls" >&2; exit 1; }
  stop=$(( 0x$(awk -F: '{ print $1 }' <<<"$calls" | tr -d ' ') + 4 ))
  out=$(timeout 300 qemu-system-arm -M "$board" -nographic -semihosting-config enable=on,target=native \
    -plugin "$plugin,start=$(( 0x$start & ~1 )),stop=$stop" -kernel "$elf" 2>"$work/qemu.err") \
    || { echo "$elf failed:" "$out" >&2; cat "$work/qemu.err" >&2; exit 1; }
  local hex; hex=$(sed -n 's/^output0: //p' <<<"$out")
  [ "$hex" = "$(xxd -p "$expected" | tr -d '\n')" ] || { echo "$elf: output0 $hex is not $expected" >&2; exit 1; }
  echo "$(sed -n 's/^insns: //p' "$work/qemu.err") $hex"
}

printf '%-10s %12s %12s %8s  %s\n' core mlf-build plain-gcc ratio output0
cores=("$@")
[ $# -gt 0 ] || cores=(m4f m55)
for core in "${cores[@]}"; do
  case $core in
    m4f) triple=thumbv7em-none-eabihf cpu= board=mps2-an386 gcc_cpu=(-mcpu=cortex-m4 -mfpu=fpv4-sp-d16)
         memory="FLASH : ORIGIN = 0x0, LENGTH = 4M
  RAM : ORIGIN = 0x20000000, LENGTH = 4M" ;;
    m55) triple=thumbv8m.main-none-eabihf cpu=cortex-m55 board=mps3-an547 gcc_cpu=(-mcpu=cortex-m55)
         memory="FLASH : ORIGIN = 0x0, LENGTH = 512K
  RAM : ORIGIN = 0x01000000, LENGTH = 2M" ;;
    *) echo "unknown core $core (m4f, m55)" >&2; exit 2 ;;
  esac
  # mlf-build: the runner as README's "Run an archive on an emulated board" builds it.
  config=()
  [ -z "$cpu" ] || config=(--config "target.'cfg(all(target_arch = \"arm\", target_os = \"none\"))'.rustflags=[\"-C\", \"target-cpu=$cpu\"]")
  json=$(cd "$root" && MLF_BOARD=$board MLF_ARCHIVE=$archive MLF_INPUTS=$vector CMSIS_NN_PATH=$cmsis CARGO_TARGET_DIR=$work/firmware \
    cargo "${config[@]}" build --release --quiet -p cortex-m-runner --target "$triple" --message-format=json)
  runner=$(jq -r 'select(.reason == "compiler-artifact" and .target.name == "cortex-m-runner") | .executable' <<<"$json")
  out_dir=$(jq -r 'select(.reason == "build-script-executed" and (.package_id | contains("cortex-m-runner"))) | .out_dir' <<<"$json")

  # Plain gcc: mlf-build wrote one wrapper per CMSIS-NN source it compiled, at
  # the source's own path under gen/kernels/; gcc compiles the originals.
  gen=$(echo "$out_dir"/mlf/build/*/gen)
  mapfile -t kernels < <(cd "$gen/kernels" && find . -name '*.c' | sort)
  sources=("$work"/archive/codegen/host/src/*.c)
  # Where the archive gives a kernel no scratch and this core's code needs
  # some (DSP cores), both builds run it with mlf-build's buffer: its file,
  # and the calling file's wrapper under gen/kernel-scratch/ instead of the file.
  if [ -d "$gen/kernel-scratch" ]; then
    while read -r rel; do
      for i in "${!sources[@]}"; do [ "${sources[$i]}" != "$work/archive/$rel" ] || sources[i]=$gen/kernel-scratch/$rel; done
    done < <(cd "$gen/kernel-scratch" && find . -name '*.c' -printf '%P\n')
    sources+=("$gen"/mlf_*_kernel_scratch.c)
  fi
  plain=$work/$core
  mkdir -p "$plain"
  printf 'MEMORY {\n  %s\n}\nENTRY(reset)\nSECTIONS {\n%s\n}\n' "$memory" '  .text : { KEEP(*(.vectors)) *(.text*) *(.rodata*) } > FLASH
  .ARM.exidx : { *(.ARM.exidx*) } > FLASH
  .data : ALIGN(4) { __data_start = .; *(.data*) . = ALIGN(4); __data_end = .; } > RAM AT > FLASH
  __data_load = LOADADDR(.data);
  .bss (NOLOAD) : ALIGN(4) { __bss_start = .; *(.bss*) *(COMMON) . = ALIGN(4); __bss_end = .; } > RAM
  __stack_top = ORIGIN(RAM) + LENGTH(RAM);' >"$plain/link.ld"
  (cd "$cmsis" && arm-none-eabi-gcc -mthumb "${gcc_cpu[@]}" -mfloat-abi=hard -Ofast -w \
    -I "$work/archive/codegen/host/include" -I "$work/archive/runtime/include" -I "$cmsis/Include" \
    -DINPUT_FILE="\"$vector\"" -DEXPECTED_FILE="\"$expected\"" \
    -nostartfiles -T "$plain/link.ld" -o "$plain/firmware.elf" \
    "$here/harness.c" "${sources[@]}" "${kernels[@]}")

  mlf_result=$(count "$runner" "$board")
  gcc_result=$(count "$plain/firmware.elf" "$board")
  read -r mlf hex <<<"$mlf_result"
  read -r gcc _ <<<"$gcc_result"
  printf '%-10s %12s %12s %8s  %s\n' "$core" "$mlf" "$gcc" "$(awk -v a="$mlf" -v b="$gcc" 'BEGIN { printf "%.4f", a / b }')" "$hex (= expected)"
done
