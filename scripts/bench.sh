#!/usr/bin/env bash
# make bench: ns per sample of each hear stage and of the chain, at 48 kHz in blocks of 256, next
# to Debian's reference plugins (swh sc4m and mbeq, lsp compressor_mono), all loaded by dlopen
# and driven by the same host (`hear-host bench`, which times run() alone) in one run, interleaved,
# median of $ROUNDS rounds.
set -euo pipefail
cd "$(dirname "$0")/.."

PLUGIN=${HEAR_PLUGIN:-$PWD/.build/release/libhear.so}
HOST=${HEAR_HOST:-$PWD/.build/release/hear-host}
ROUNDS=${ROUNDS:-5}
SECONDS_OF_AUDIO=${BENCH_SECONDS:-30}
LADSPA_DIR=/usr/lib/ladspa

[ -x "$HOST" ] || { echo "bench: $HOST is missing: run make first" >&2; exit 1; }
for f in "$LADSPA_DIR/sc4m_1916.so" "$LADSPA_DIR/mbeq_1197.so" "$LADSPA_DIR/lsp-plugins-ladspa-1.2.5.so"; do
  [ -f "$f" ] || { echo "bench: $f is missing: apt-get install swh-plugins lsp-plugins-ladspa" >&2; exit 1; }
done
mkdir -p .build

OFF="ns.enable=0 eq.enable=0 comp.enable=0 limit.enable=0"
# Every EQ band doing something, so the EQ figure is its full cost, not the default high-pass alone.
EQ_ALL="eq.low.gain=3 eq.peak1.gain=-4 eq.peak2.gain=5 eq.peak3.gain=3 eq.high.gain=2"
# 10 s of a 220 Hz tone decaying 1 dB per 10 ms: it passes through the subnormal range to silence,
# where a filter without a denormal guard slows down by orders of magnitude.
python3 - <<'PY'
import array, math
rate, n = 48000, 480000
decay = 10 ** (-1 / 20 / 480)
out = array.array('f', (0.5 * decay ** i * math.sin(2 * math.pi * 220 * i / rate) for i in range(n)))
open('.build/decay.f32', 'wb').write(out.tobytes())
PY

declare -a NAMES CMDS
add() { NAMES+=("$1"); CMDS+=("$2"); }
add "hear_mono: equalizer (6 bands)"        "$PLUGIN hear_mono $OFF eq.enable=1 $EQ_ALL"
add "hear_mono: equalizer (default: HP)"    "$PLUGIN hear_mono $OFF eq.enable=1"
add "hear_mono: compressor"                 "$PLUGIN hear_mono $OFF comp.enable=1"
add "hear_mono: gain +6 dB"                 "$PLUGIN hear_mono $OFF gain=6"
add "hear_mono: limiter (idle)"             "$PLUGIN hear_mono $OFF limit.enable=1"
add "hear_mono: limiter (limiting, +14 dB)"  "$PLUGIN hear_mono $OFF limit.enable=1 gain=14"
add "hear_mono: all stages off (frame)"     "$PLUGIN hear_mono $OFF"
add "hear_mono: noise suppressor (learned)"  "$PLUGIN hear_mono $OFF ns.enable=1 ns.mode=1"
add "hear_mono: noise suppressor (classical)" "$PLUGIN hear_mono $OFF ns.enable=1 ns.mode=0"
add "hear_mono: EQ(HP)+comp+limiter"        "$PLUGIN hear_mono ns.enable=0"
add "hear_mono: EQ(6)+comp+limiter"         "$PLUGIN hear_mono ns.enable=0 $EQ_ALL"
add "hear_mono: full chain, defaults"       "$PLUGIN hear_mono"
add "hear_mono: full chain, decay to silence" "-i .build/decay.f32 $PLUGIN hear_mono"
# The microphone chain with a speaker chain beside it (hear-host bench -e): its echo canceller cancels.
add "hear_mono: full chain, cancelling echo"  "-e hear_stereo $PLUGIN hear_mono chain=1"
add "hear_stereo: full chain, defaults"     "$PLUGIN hear_stereo"
add "hear_stereo: EQ(6)+comp+limiter"       "$PLUGIN hear_stereo ns.enable=0 $EQ_ALL"
# A hearing profile (issue #6): the six-band stage with a moderate sloping NAL-R fit on both ears,
# next to LSP's multiband compressor with its defaults.
HEARING="mb.enable=1 comp.enable=0 mb.left.gain1=0.8 mb.left.gain2=-9 mb.left.gain3=23.7 mb.left.gain4=21.8 mb.left.gain5=25.2 mb.left.gain6=26.7 mb.right.gain1=0.8 mb.right.gain2=-9 mb.right.gain3=23.7 mb.right.gain4=21.8 mb.right.gain5=25.2 mb.right.gain6=26.7 mb.left.ratio3=1.6 mb.left.ratio4=1.9 mb.left.ratio5=2.1 mb.left.ratio6=2.2 mb.right.ratio3=1.6 mb.right.ratio4=1.9 mb.right.ratio5=2.1 mb.right.ratio6=2.2"
add "hear_mono: hearing profile (6 bands)"   "$PLUGIN hear_mono ns.enable=0 $HEARING"
add "hear_stereo: hearing profile (6 bands)" "$PLUGIN hear_stereo ns.enable=0 $HEARING"
add "lsp mb_compressor_stereo"              "$LADSPA_DIR/lsp-plugins-ladspa-1.2.5.so http://lsp-plug.in/plugins/ladspa/mb_compressor_stereo"
add "swh sc4m (compressor)"                 "$LADSPA_DIR/sc4m_1916.so sc4m"
add "swh mbeq (15-band EQ)"                 "$LADSPA_DIR/mbeq_1197.so mbeq"
add "lsp compressor_mono"                   "$LADSPA_DIR/lsp-plugins-ladspa-1.2.5.so http://lsp-plug.in/plugins/ladspa/compressor_mono"

declare -A RESULTS
for ((round = 0; round < ROUNDS; round++)); do
  for i in "${!CMDS[@]}"; do
    # shellcheck disable=SC2086
    ns=$("$HOST" bench -s "$SECONDS_OF_AUDIO" -b 256 -r 48000 ${CMDS[$i]} 2>/dev/null | sed -n 's/.*: \([0-9.]*\) ns\/sample\/ch.*/\1/p')
    RESULTS[$i]="${RESULTS[$i]:-} $ns"
  done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
SC4M=""
for i in "${!NAMES[@]}"; do [ "${NAMES[$i]}" = "swh sc4m (compressor)" ] && SC4M=$(echo "${RESULTS[$i]}" | median); done
printf '%s\n' "48 kHz, block 256, ${SECONDS_OF_AUDIO} s of audio per run, median of $ROUNDS interleaved rounds; $(nproc) cores, $(uname -m)"
printf '| %-40s | %14s | %10s |\n' "plugin / stage" "ns/sample/ch" "vs sc4m"
printf '|%s|%s|%s|\n' "------------------------------------------" "----------------" "------------"
for i in "${!CMDS[@]}"; do
  m=$(echo "${RESULTS[$i]}" | median)
  printf '| %-40s | %14.2f | %10.2f |\n' "${NAMES[$i]}" "$m" "$(awk -v a="$m" -v b="$SC4M" 'BEGIN { print a / b }')"
done
