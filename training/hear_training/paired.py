"""Two builds of libhear.so on the same deciding clips, clip by clip: is a retrained model better?

    python -m hear_training.paired BEFORE.so AFTER.so [--noises a,b]

Both run as `make eval` runs hear (evaluate.run: hear-host bench, EQ and compressor off, learned
mode, delay removed, PESQ-WB at 16 kHz after the first second of noise). A difference of means
between two runs of `make eval` mixes the models' difference with nothing else, but its size
alone does not say whether it is more than the spread between checkpoints; the same clips through
both builds do: per noise family the mean PESQ-WB of each, their mean difference (AFTER - BEFORE)
and its standard error over the clips, and the difference per noise and per talker.
"""

import argparse
import os

import numpy as np

from . import corpus, evaluate, methods

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("before", help="libhear.so of the model compared against (e.g. .build/release/libhear.so)")
    parser.add_argument("after", help="libhear.so of the candidate (a build with another hear-model.bin)")
    parser.add_argument("--noises", default="a,b", help="noise families (evaluate.py's)")
    parser.add_argument("--host", default=os.path.join(ROOT, ".build/release/hear-host"))
    parser.add_argument("--cache", default=os.path.join(ROOT, ".build/eval-cache"))
    args = parser.parse_args()
    controls = {"eq.enable": 0, "comp.enable": 0, "ns.mode": 1}
    for family in args.noises.split(","):
        clips, clean_only = corpus.build_recorded(args.cache, ["deciding"], family)["deciding"]
        rows = [evaluate.run(methods.Hear(plugin, args.host, controls), clips, clean_only)["rows"]
                for plugin in (args.before, args.after)]
        before, after = (np.array([r["pesq"] for r in side]) for side in rows)
        d = after - before
        print(f"family {family}, {len(d)} clips: PESQ-WB {before.mean():.4f} -> {after.mean():.4f}, "
              f"difference {d.mean():+.4f} (standard error {d.std(ddof=1) / np.sqrt(len(d)):.4f})")
        for key in ("noise", "talker"):
            for value in sorted({r[key] for r in rows[0]}):
                chosen = [i for i, r in enumerate(rows[0]) if r[key] == value]
                print(f"  {key} {value:<14} {d[chosen].mean():+.4f}")


if __name__ == "__main__":
    main()
