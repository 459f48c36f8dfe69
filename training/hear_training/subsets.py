"""Two training sets of equal size cut from `make train`'s mixtures, to measure what more clips and
more talkers are worth (training/README.md, "What more speech would buy"):

  half-talkers   every clip spoken by half of the training talkers (recorded and TTS apart, ranked by
                 their clip count and dealt 1-0-0-1, so that both halves hold large and small talkers)
  all-talkers    as many clips with speech, drawn at random (seeded) from every talker

Both keep every noise-only clip and the whole validation sets, per set that train.py reads (`sets`:
train, train-16k, train-8k). A set is a folder of symbolic links to the mixtures' feature files and a
manifest of the clips it keeps, which train.py reads as it reads `make train`'s folder:

  PYTHONPATH=training python3 -m hear_training.subsets .build/train/data OUT
  PYTHONPATH=training python3 -m hear_training.train --data OUT/half-talkers --work WORK ...
"""

import argparse
import collections
import json
import os
import random

from .train import manifest as read_manifest, sets


def half_of_the_talkers(clips):
    """The talkers of one half: per kind, ranked by clip count, dealt to this half at ranks 0, 3, 4, 7, ..."""
    counts = collections.Counter((c["speaker"], c["speaker_kind"]) for c in clips if c["speaker"])
    half = set()
    for kind in sorted({k for _, k in counts}):
        ranked = sorted((s for s, k in counts if k == kind), key=lambda s: (-counts[(s, kind)], s))
        half |= {s for i, s in enumerate(ranked) if i % 4 in (0, 3)}
    return half


def write_set(source, target, manifest, kept):
    os.makedirs(target)
    kept = sorted(kept, key=lambda c: c["clip"])
    for clip in kept:
        os.symlink(os.path.join(source, clip["clip"] + ".feat"), os.path.join(target, clip["clip"] + ".feat"))
    with open(os.path.join(target, "manifest.json"), "w") as f:
        json.dump(dict(manifest, clips=kept), f)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", help="make train's mixtures and features (.build/train/data)")
    parser.add_argument("out", help="a folder that does not exist yet")
    parser.add_argument("--seed", type=int, default=34)
    args = parser.parse_args()
    data = os.path.abspath(args.data)
    if os.path.exists(args.out):
        parser.error(f"{args.out} exists: give a new folder")
    rng = random.Random(args.seed)
    half = half_of_the_talkers(read_manifest(os.path.join(data, "train"))["clips"])
    for directory in sets(data, "train"):
        stream, manifest = os.path.basename(directory), read_manifest(directory)
        speech = [c for c in manifest["clips"] if c["speaker"]]
        noise_only = [c for c in manifest["clips"] if not c["speaker"]]
        halved = [c for c in speech if c["speaker"] in half]
        drawn = rng.sample(speech, len(halved))
        for name, chosen in (("half-talkers", halved), ("all-talkers", drawn)):
            write_set(directory, os.path.join(args.out, name, stream), manifest, chosen + noise_only)
            print(f"{name:12s} {stream:9s} {len(chosen) + len(noise_only):5d} clips, {len(chosen)} with speech "
                  f"from {len({c['speaker'] for c in chosen})} talkers")
    for name in ("half-talkers", "all-talkers"):
        for directory in sets(data, "valid"):
            os.symlink(directory, os.path.join(args.out, name, os.path.basename(directory)))
    print("half-talkers speak with:", ", ".join(sorted(half)))


if __name__ == "__main__":
    main()
