#!/bin/bash
# One call of the accelerator trains the learned noise suppressor from the bundle that
# `make accelerator-bundle` leaves in .build/accelerator (training/README.md, "On an accelerator"):
#
#   run(command="bash training/accelerator.sh", carry=[".build/accelerator"], timeout_s=600)
#
# There (an NVIDIA machine: PyTorch with CUDA, numpy, scipy; no Swift, no Debian packages, no
# network) it unpacks the training bank into a cache of its own, checks that hear-features (the
# suppressor's own features, linked statically) and data.py give there what they give here on
# the bundle's check clips and that PyTorch's GRU there is the numpy GRU's (train.py --check),
# mixes the sets of `make train` with data.py on every core, computes
# their features on the GPU (features.py, held to hear-features on the check clips there) or with
# hear-features on every core (HEAR_ACCELERATOR_FEATURES=hear-features), trains on the GPU (PyTorch's GRU, the same
# equations as the CPU's numpy GRU) for the time that is left, one run or several side by side,
# and writes to $OUT (or .build/accelerator-out) the log and one tar a run (run-1.tar, ...): its
# hear-model.bin (the lowest validation loss) and .sha256, reference-vectors.bin, history.json,
# loss.png, its log, and every checkpoint's weights and blob, among which pick.py chooses here
# (training/README.md).
#
# Variables: HEAR_ACCELERATOR_SECONDS (540: the whole run, within one call's 600),
# HEAR_ACCELERATOR_RUNS (train.py's arguments for each run, ';' between runs: "--seed 1; --seed 2";
# one run of the recipe by default), TRAIN_CLIPS (6000), TRAIN_BAND_CLIPS (500), VALID_CLIPS (200),
# VALID_BAND_CLIPS (50), HEAR_ACCELERATOR_FEATURES (torch: features.py on HEAR_DEVICE; hear-features), TRAIN_BATCH (64), TRAIN_UPDATES (the cosine's length at most: 100000,
# shortened to what fits), TRAIN_VALID_EVERY (1000: a checkpoint's 250-320 kB, and a call returns
# at most 16 MiB a file), HEAR_DEVICE (cuda; cpu runs the same steps here, slowly: the dry run in
# training/README.md), HEAR_PYTHON (python3), OUT.
set -euo pipefail
started=$(date +%s)
budget=${HEAR_ACCELERATOR_SECONDS:-540}
bundle=${HEAR_ACCELERATOR_BUNDLE:-.build/accelerator}
out=${OUT:-.build/accelerator-out}
work=${HEAR_ACCELERATOR_WORK:-/tmp/hear-accelerator}
device=${HEAR_DEVICE:-cuda}
feature_path=${HEAR_ACCELERATOR_FEATURES:-torch}
case "$feature_path" in torch|hear-features) ;; *) echo "HEAR_ACCELERATOR_FEATURES: torch or hear-features, not $feature_path"; exit 2 ;; esac
python=${HEAR_PYTHON:-python3}
cores=$(nproc)
mkdir -p "$out" "$work"
exec > >(tee "$out/log.txt") 2>&1
elapsed() { echo $(( $(date +%s) - started )); }
say() { echo "[$(elapsed) s] $*"; }

[ -f "$bundle/bank/bank.json" ] || { echo "no bundle at $bundle: make accelerator-bundle here, then carry .build/accelerator"; exit 2; }
# The wheels the bundle carries (soundfile, which bundles libsndfile with Opus; cffi, pycparser).
if ! "$python" -c "import soundfile" 2>/dev/null; then
  "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$work/site" "$bundle"/wheels/*.whl
  export PYTHONPATH="$work/site"
fi
export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$PWD/training"
export HEAR_TRAIN_CACHE="$work/cache"
export LD_LIBRARY_PATH="$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
features="$bundle/bin/hear-features"
say "$cores cores; $("$python" -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available())')"

"$python" -m hear_training.bank unpack "$bundle/bank"
say "bank unpacked"
# PyTorch's GRU there against the numpy GRU that CPU training runs (outputs and gradients).
"$python" -m hear_training.train --check

# The checks: the bundle's check clips (data.py's, from the unpacked bank, one per rate) mixed again
# here from the same seeds, and their features computed again here, against the bundle's.
"$python" - "$bundle/check" "$work/check" "$features" <<'EOF'
import glob, json, os, shutil, subprocess, sys
import numpy as np
check, work, features = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
mixed = computed = 0.0
for directory in sorted(glob.glob(os.path.join(check, "*"))):
    with open(os.path.join(directory, "args.json")) as f:
        args = json.load(f)
    again = os.path.join(work, os.path.basename(directory))
    subprocess.run([sys.executable, "-m", "hear_training.data", "--out", again, "--workers", "1"] + args, check=True)
    subprocess.run([features, again], check=True)
    for path in sorted(glob.glob(os.path.join(directory, "*.f32")) + glob.glob(os.path.join(directory, "*.feat"))):
        a, b = np.fromfile(path, "<f4"), np.fromfile(os.path.join(again, os.path.basename(path)), "<f4")
        difference = float(np.max(np.abs(a - b))) if a.shape == b.shape else float("inf")
        if path.endswith(".feat"):
            computed = max(computed, difference)
        else:
            mixed = max(mixed, difference)
print(f"check clips: mixtures differ from the bundle's by at most {mixed:.3g}, features by at most {computed:.3g}")
if mixed > 1e-4 or computed > 1e-3:
    sys.exit("data.py or hear-features gives other results here than where the bundle was made")
EOF
if [ "$feature_path" = torch ]; then
  # features.py there against hear-features there on the same clips, within its bounds.
  HEAR_FEATURES="$features" "$python" -m hear_training.features --check --device "$device" "$work"/check/*
fi
say "checks passed"

data="$work/data"
# make train's sets (Makefile: train-set), each mixed on every core. With hear-features, each set's
# features are computed on every core once it is mixed; with features.py, on the GPU in the
# background while the next sets mix. The mixtures go once their features are there (the features
# are all training reads).
feature_pids=() feature_sets=()
make_set() {  # DIRECTORY SPLIT CLIPS SEED RATE
  "$python" -m hear_training.data --split "$2" --out "$data/$1" --clips "$3" --seed "$4" --rate "$5" --workers "$cores"
  if [ "$feature_path" = hear-features ]; then
    # (Waited for by pid: a bare `wait` would also wait for the log's tee.)
    local pids=()
    for ((i = 0; i < cores; i++)); do "$features" --shard "$i/$cores" "$data/$1" > /dev/null & pids+=($!); done
    for pid in "${pids[@]}"; do wait "$pid"; done
    rm -f "$data/$1"/*-clean.f32 "$data/$1"/*-noise.f32
    say "$1: $3 clips mixed, features computed"
  else
    say "$1: $3 clips mixed"
    "$python" -m hear_training.features --device "$device" "$data/$1" > "$work/features-$1.log" 2>&1 &
    feature_pids+=($!) feature_sets+=("$1")
  fi
}
make_set valid valid "${VALID_CLIPS:-200}" 2 48000
make_set valid-16k valid "${VALID_BAND_CLIPS:-50}" 5 16000
make_set valid-8k valid "${VALID_BAND_CLIPS:-50}" 6 8000
make_set train train "${TRAIN_CLIPS:-6000}" 1 48000
make_set train-16k train "${TRAIN_BAND_CLIPS:-500}" 3 16000
make_set train-8k train "${TRAIN_BAND_CLIPS:-500}" 4 8000
if [ "$feature_path" = torch ]; then
  for ((i = 0; i < ${#feature_pids[@]}; i++)); do
    set=${feature_sets[$i]}
    wait "${feature_pids[$i]}" || { cat "$work/features-$set.log"; echo "features.py failed on $set"; exit 1; }
    cat "$work/features-$set.log"
    rm -f "$data/$set"/*-clean.f32 "$data/$set"/*-noise.f32
  done
  say "features computed (features.py on $device, each set while the next ones mixed)"
fi

# The runs (HEAR_ACCELERATOR_RUNS: train.py's arguments for each, ';' between runs; one run of the
# recipe by default) train side by side on the one GPU, each with its share of the cores: the model
# is small, so one run leaves the GPU mostly idle and several take about as long as one. Each stops
# at the same moment (train.py --until), however long its features took to load, 45 s before the
# budget's end (the export and the packing), and the learning rate's cosine is fitted to the
# updates that its time holds (train.py --fit-schedule).
IFS=';' read -ra runs <<< "${HEAR_ACCELERATOR_RUNS:- }"
count=${#runs[@]}
threads=$(( cores / count > 0 ? cores / count : 1 ))
until=$(( started + budget - 45 ))
[ $(( until - $(date +%s) )) -gt 90 ] || { echo "only $(( until - $(date +%s) )) s left to load and train: fewer clips (TRAIN_CLIPS) or a longer HEAR_ACCELERATOR_SECONDS"; exit 1; }
say "training $count run(s) on $device until $(( until - started )) s, $threads thread(s) each"
pids=()
for ((i = 0; i < count; i++)); do
  name=run-$((i + 1))
  mkdir -p "$work/$name"
  echo "${runs[$i]}" > "$work/$name/arguments.txt"
  # shellcheck disable=SC2086  # a run's arguments are words
  "$python" -m hear_training.train --data "$data" --work "$work/$name" --device "$device" --torch-gru --fit-schedule \
    --batch "${TRAIN_BATCH:-64}" --updates "${TRAIN_UPDATES:-100000}" --valid-every "${TRAIN_VALID_EVERY:-1000}" \
    --until "$until" --threads "$threads" --blob "$work/$name/hear-model.bin" \
    --reference "$work/$name/reference-vectors.bin" ${runs[$i]} > "$work/$name/log.txt" 2>&1 &
  pids+=($!)
done
failed=0
for ((i = 0; i < count; i++)); do
  name=run-$((i + 1))
  wait "${pids[$i]}" || { failed=1; say "$name (${runs[$i]}) failed:"; tail -20 "$work/$name/log.txt"; }
  grep -E "^update [0-9]+:|updates in|exporting" "$work/$name/log.txt" | tail -4 | sed "s/^/$name: /" || true
  # Every checkpoint as a blob too (train.py --export-candidates), which pick.py scores here
  # (training/README.md) whatever PyTorch this machine has.
  "$python" -m hear_training.train --work "$work/$name" --export-candidates ${runs[$i]} >> "$work/$name/log.txt" 2>&1 || failed=1
  # One file a run comes back (a call returns at most 8, each at most 16 MiB): the exported model,
  # its .sha256 and reference vectors, history.json, loss.png, the log, every checkpoint's weights
  # (250-320 kB each) and blobs.
  (cd "$work/$name" && tar -cf "$out/$name.tar" --ignore-failed-read arguments.txt log.txt history.json loss.png \
    hear-model.bin hear-model.bin.sha256 reference-vectors.bin checkpoints candidates) || failed=1
  size=$(stat -c %s "$out/$name.tar" 2>/dev/null || echo 0)
  say "$name.tar: $(( size / 1024 )) KiB$( [ "$size" -le 16777216 ] || echo ': over 16 MiB, a call returns no such file (fewer checkpoints: TRAIN_VALID_EVERY)')"
done
say "done: $out"
exit "$failed"
