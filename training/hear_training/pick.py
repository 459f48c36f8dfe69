"""Picks the model to export by how its output sounds on the validation clips (`make train`'s last
step), not by the training loss.

A lower validation loss does not mean a better sound: the loss weighs every band's gain error alike,
PESQ weighs what a listener hears. So each candidate that train.py kept (`train.py
--export-candidates`: every checkpoint's weights, and the weight means of the last 3 and 5) runs in
the suppressor itself (`hear-features denoise --model BLOB`: learned mode at its defaults, output
lined up with its input) over every clip that holds speech of two sets, at the clip's own rate:
the validation clips (DATA/valid at 48 kHz, valid-16k, valid-8k: the validation talkers' words and
short phrases) and the pick clips (DATA/pick, 48 kHz: continuous dialog, fillets-ng's Dutch lines
that RNNoise passes as dry speech, in training's noises; neither set is an evaluation talker's or
trained on). Each output is scored by PESQ-WB against the clip's dry speech at 16 kHz, as `make
eval` scores (the first second of each clip left out: the suppressor's start); a candidate's score
is the mean of the two sets' means. The checkpoint with the lowest validation loss is the default,
and a candidate replaces it only where it sounds clearly better on both sets (`clearly_better`: by
CLEAR_MARGIN_SE paired standard errors); among those, the highest score wins. The highest score
alone picks within the clips' noise, and such picks lost on the deciding set (training/README.md).
WORK/pick.json holds every candidate's score, its validation loss where it is a checkpoint, and the
choice, which `train.py --export-candidate NAME` then exports. A candidate's scores stay beside its
blob (NAME.pesq.json, with what they were taken from), so pick.py can run while training goes on and
a rerun scores only what is new.

Runs in the evaluation's venv (.build/venv: pesq, scipy); needs no torch.
"""

import argparse
import glob
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor

import numpy as np
from pesq import pesq
from scipy import signal

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
METRIC_RATE = 16000
# The suppressor's first second: its estimates settle (every clip starts from a fresh state).
SKIP_SECONDS = 1.0


# How clearly a candidate must sound better than the checkpoint with the lowest validation loss to
# be chosen over it: by this many standard errors of the paired differences, in each group. The
# late checkpoints of a run differ by a few thousandths here, less than the clips' noise, and the
# highest score alone chose a checkpoint that scored 0.002-0.018 below the lowest loss's on the
# deciding set in all eight of four runs' families (training/README.md, "The pick").
CLEAR_MARGIN_SE = 2.0

# The two kinds of validation speech, weighed alike: the validation talkers' words and short
# phrases as training has them (DATA/valid*), and continuous dialog (DATA/pick: speech.py's pick
# speaker, fillets-ng's Dutch lines, mixed by data.py --split pick; no features, never trained on).
GROUPS = ("valid", "pick")


def validation_clips(data):
    """Per set (valid, valid-16k, valid-8k, pick): its rate and the clips that hold speech (name,
    clean path, noise path)."""
    sets = []
    for directory in sorted(d for g in GROUPS for d in glob.glob(os.path.join(data, g + "*")) if os.path.isdir(d)):
        with open(os.path.join(directory, "manifest.json")) as f:
            manifest = json.load(f)
        clips = [(os.path.basename(directory) + "/" + c["clip"], os.path.join(directory, c["clip"] + "-clean.f32"),
                  os.path.join(directory, c["clip"] + "-noise.f32"))
                 for c in manifest["clips"] if c.get("speaker")]
        sets.append((manifest.get("rate", 48000), clips))
    return sets


def to_metric_rate(x, rate):
    return signal.resample_poly(x, METRIC_RATE, rate) if rate != METRIC_RATE else x


def blob_hash(blob):
    with open(blob, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def context_hash(features, data):
    """What else a score depends on: the suppressor (hear-features' binary) and the validation sets
    (their manifests: every clip's seed-drawn recipe)."""
    h = hashlib.sha256()
    for path in [features] + sorted(glob.glob(os.path.join(data, "valid*", "manifest.json"))):
        with open(path, "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def cached(blob, context):
    """A candidate's scores from an earlier run of pick.py (NAME.pesq.json beside its blob), if they
    were taken from this very blob with this suppressor on these clips."""
    path = blob[:-4] + ".pesq.json"
    if not os.path.exists(path):
        return None
    with open(path) as f:
        saved = json.load(f)
    return saved["scores"] if saved.get("blob") == blob_hash(blob) and saved.get("context") == context else None


def score(task):
    """One candidate's PESQ-WB on every validation clip with speech: {clip: score}; kept beside its
    blob (NAME.pesq.json), so that a rerun scores only new candidates (pick.py may run while
    training goes on)."""
    features, blob, sets, scratch, context = task
    scores = {}
    with tempfile.TemporaryDirectory(dir=scratch) as tmp:
        for rate, clips in sets:
            pairs = []
            for i, (name, clean, noise) in enumerate(clips):
                mixture = os.path.join(scratch, name.replace("/", "-") + ".f32")
                pairs += [mixture, os.path.join(tmp, f"{i}.f32")]
            subprocess.run([features, "denoise", "--model", blob, "--rate", str(rate)] + pairs, check=True)
            for i, (name, clean, noise) in enumerate(clips):
                reference = to_metric_rate(np.fromfile(clean, "<f4").astype(np.float64), rate)
                output = to_metric_rate(np.fromfile(os.path.join(tmp, f"{i}.f32"), "<f4").astype(np.float64), rate)
                skip = int(SKIP_SECONDS * METRIC_RATE)
                try:
                    scores[name] = pesq(METRIC_RATE, reference[skip:], output[skip:len(reference)], "wb")
                except Exception:  # PESQ finds no speech in the reference: the clip says nothing
                    pass
    with open(blob[:-4] + ".pesq.json.tmp", "w") as f:
        json.dump(dict(blob=blob_hash(blob), context=context, scores=scores), f)
    os.replace(blob[:-4] + ".pesq.json.tmp", blob[:-4] + ".pesq.json")
    return scores


def clearly_better(scores, candidate, baseline, groups):
    """Whether `candidate` scores above `baseline` in every group by CLEAR_MARGIN_SE standard errors
    of the per-clip differences (the same clips: a paired comparison)."""
    for members in groups.values():
        d = np.array([scores[candidate][c] - scores[baseline][c] for c in members])
        if len(d) < 2 or d.mean() <= CLEAR_MARGIN_SE * d.std(ddof=1) / np.sqrt(len(d)):
            return False
    return True


def choose(table, scores, groups, by_loss):
    """The highest-scoring candidate among those clearly better than the lowest validation loss's
    checkpoint (`clearly_better`), else that checkpoint; without a loss history, the highest score."""
    if by_loss is None:
        return max(table, key=lambda row: row["pesq_wb"])
    for row in table:
        row["clearly_better"] = row is not by_loss and clearly_better(scores, row["candidate"], by_loss["candidate"], groups)
    better = [row for row in table if row["clearly_better"]]
    return max(better, key=lambda row: row["pesq_wb"]) if better else by_loss


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=os.path.join(ROOT, ".build/train/data"))
    parser.add_argument("--work", default=os.path.join(ROOT, ".build/train"))
    parser.add_argument("--features", default=os.path.join(ROOT, ".build/release/hear-features"),
                        help="hear-features, built with the suppressor the weights are for")
    parser.add_argument("--jobs", type=int, default=os.cpu_count(), help="candidates scored at once")
    parser.add_argument("--only", help="comma-separated candidate names (default: every WORK/candidates/*.bin)")
    args = parser.parse_args()

    blobs = sorted(glob.glob(os.path.join(args.work, "candidates", "*.bin")))
    if args.only:
        wanted = args.only.split(",")
        blobs = [b for b in blobs if os.path.basename(b)[:-4] in wanted]
    if not blobs:
        sys.exit(f"no candidates in {args.work}/candidates: run train.py --export-candidates first")
    if not os.access(args.features, os.X_OK):
        sys.exit(f"{args.features}: no hear-features (swift build -c release --product hear-features)")
    sets = validation_clips(args.data)
    if not any(clips for _, clips in sets):
        sys.exit(f"no validation clips with speech under {args.data}/valid*")
    losses = {}
    history = os.path.join(args.work, "history.json")
    if os.path.exists(history):
        with open(history) as f:
            losses = {f"{h['update']:06d}": h["valid"] for h in json.load(f)}

    context = context_hash(args.features, args.data)
    results = [cached(blob, context) for blob in blobs]
    new = [blob for blob, result in zip(blobs, results) if result is None]
    if new:
        with tempfile.TemporaryDirectory(prefix="hear-pick-") as scratch:
            for rate, clips in sets:  # the mixtures, once: what hear-features' training rows were made from
                for name, clean, noise in clips:
                    mixture = np.fromfile(clean, "<f4") + np.fromfile(noise, "<f4")
                    mixture.astype("<f4").tofile(os.path.join(scratch, name.replace("/", "-") + ".f32"))
            with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
                fresh = dict(zip(new, pool.map(score, [(args.features, blob, sets, scratch, context) for blob in new])))
        results = [fresh.get(blob, result) for blob, result in zip(blobs, results)]
    print(f"{len(new)} candidates scored, {len(blobs) - len(new)} from earlier runs", file=sys.stderr)

    clips = sorted(set.intersection(*(set(r) for r in results)))
    groups = {g: [c for c in clips if c.split("/")[0].startswith(g)] for g in GROUPS}
    groups = {g: members for g, members in groups.items() if members}
    table = []
    for blob, result in zip(blobs, results):
        name = os.path.basename(blob)[:-4]
        means = {g: float(np.mean([result[c] for c in members])) for g, members in groups.items()}
        table.append(dict(candidate=name, pesq_wb=float(np.mean(list(means.values()))), by_set=means,
                          valid_loss=losses.get(name)))
    by_loss = min((row for row in table if row["valid_loss"] is not None), key=lambda row: row["valid_loss"], default=None)
    scores = {os.path.basename(blob)[:-4]: result for blob, result in zip(blobs, results)}
    chosen = choose(table, scores, groups, by_loss)
    counts = ", ".join(f"{g} {len(members)}" for g, members in groups.items())
    print(f"PESQ-WB on the clips with speech ({counts}); the score is the sets' mean")
    print(f"{'candidate':<22} {'score':>7} " + " ".join(f"{g:>7}" for g in groups) + f" {'valid loss':>11}")
    for row in table:
        loss = f"{row['valid_loss']:.5f}" if row["valid_loss"] is not None else ""
        marks = [m for m, hit in (("chosen", row is chosen), ("lowest loss", row is by_loss),
                                  ("clearly better", row.get("clearly_better"))) if hit]
        print(f"{row['candidate']:<22} {row['pesq_wb']:>7.4f} " + " ".join(f"{row['by_set'][g]:>7.4f}" for g in groups)
              + f" {loss:>11}" + (f"  <- {', '.join(marks)}" if marks else ""))
    with open(os.path.join(args.work, "pick.json"), "w") as f:
        json.dump(dict(chosen=chosen["candidate"], clips={g: len(m) for g, m in groups.items()}, candidates=table), f, indent=1)
    print(chosen["candidate"])


if __name__ == "__main__":
    main()
