"""Which recorded speech in the registries is dry enough to decide on: a probe of every talker.

A deciding set has to judge a suppressor the way a call does: against a reference without a room
or a floor. PESQ against a reference that keeps its recording's floor marks down whatever removes
that floor (RNNoise's clean-input PESQ-WB falls from about 4 on dry speech to about 3 with a floor
35 dB down; hear keeps such floors and was "ahead" for it). So before a talker may decide, its
recordings are measured here, per talker, against the two conditions a deciding talker must meet:

  floor    each source file's quietest 50 ms against its active speech level (speech.file_floor_db,
           the measure training's dry targets pass too); the talker's median file must lie at least
           FLOOR_DB below its speech;
  RNNoise  RNNoise's PESQ-WB on the talker's clean speech alone (utterances as the evaluation
           builds them, 2.5-7 s of prompts joined with 0.15-0.25 s of silence, at -26 dBFS) at
           least RNNOISE_CLEAN_PESQ: RNNoise passes dry speech nearly untouched (4.1 on a dry TTS
           voice here), so a lower figure says the reference holds something RNNoise removes.

Both are printed raw and after speech.gate (everything outside the speech set to zero, the one
treatment a source with a high floor may get: the floor under the speech stays).

    python -m hear_training.sources [--talkers a,b] [--workers 2]   (the eval venv: .build/venv)

Every recorded speaker of speech.py is probed (train and valid ones too: a dry training talker
could move to the deciding set), and CANDIDATES, sources no split reads yet.
"""

import argparse
import concurrent.futures
import os
import re
import sys

import numpy as np
from pesq import NoUtterancesError, pesq
from scipy import signal

from . import speech
from .corpus import RATE, SPEECH_LEVEL_DB, active_level

FLOOR_DB = -45.0
RNNOISE_CLEAN_PESQ = 3.5

# Sources that speech.py does not read: (name, language, package, files matching, files left out,
# at most this many files). fillets-ng's dialog: "m" lines are the small fish (a woman), "v" the big
# fish (a man), other prefixes other characters; 22.05 kHz Vorbis.
CANDIDATES = [
    ("fillets-nl-m", "nl", "fillets-ng-data-nl", r"/nl/[^/]*-m-[^/]*\.ogg$", None, 60),
    ("fillets-nl-v", "nl", "fillets-ng-data-nl", r"/nl/[^/]*-v-[^/]*\.ogg$", None, 60),
    ("fillets-cs-m", "cs", "fillets-ng-data-cs", r"/cs/[^/]*-m-[^/]*\.ogg$", None, 60),
    ("fillets-cs-v", "cs", "fillets-ng-data-cs", r"/cs/[^/]*-v-[^/]*\.ogg$", None, 60),
    # The speaker-test voice (channel names; one woman, 48 kHz).
    ("alsa-utils", "en", "alsa-utils", r"/sounds/alsa/(Front|Rear|Side)_", None, 60),
    # codec2's wideband reference sentence (16 kHz).
    ("codec2-16k", "en", "codec2-examples", r"/speech_orig_16k\.wav$", None, 60),
]
PER_TALKER_FILES = 60

# Dialog lines (`--lines`): fillets-ng's Dutch lines are phrases of continuous speech (96 minutes,
# floors 54-61 dB under the speech in the median file per character), but some characters' voices
# carry effects that RNNoise takes for noise, so each line's dry target (speech.dry_target) is scored
# alone: what a training set of dialog could keep (training/README.md has the count and what a
# model trained with them measured).
LINE_SOURCES = [("fillets-ng-data-nl", r"/nl/[^/]*\.ogg$")]
LINES_FILE = os.path.join(speech.ROOT, ".build", "dialog-lines.tsv")


class CleanPESQ:
    """RNNoise's PESQ-WB on clean speech: at -26 dBFS, 0.25 s of silence before, 16 kHz scoring."""

    def __init__(self):
        from .methods import RNNoise
        self.rnnoise = RNNoise()

    def __call__(self, x):
        x = x * 10 ** (SPEECH_LEVEL_DB / 20) / active_level(x)
        padded = np.concatenate([np.zeros(RATE // 4), x, np.zeros(RATE // 5)])
        y = self.rnnoise.process(padded)  # PESQ aligns the output itself
        return pesq(16000, signal.resample_poly(padded, 1, 3), signal.resample_poly(y, 1, 3), "wb")


def talker_files(name):
    """(language, split, [paths]) of one talker: a speech.py speaker or a CANDIDATE."""
    for cname, language, package, include, exclude, limit in CANDIDATES:
        if cname == name:
            paths = [p for p in speech.package_files(package, exclude) if re.search(include, p)]
            return language, "-", paths[:: max(1, len(paths) // limit)][:limit]
    speaker = speech.BY_NAME[name]
    paths = [p for _, p in speech._sources(speaker)]
    return speaker.language, speaker.split, paths[:: max(1, len(paths) // PER_TALKER_FILES)][:PER_TALKER_FILES]


def utterances(prompts, count=3, seed=1):
    """Up to `count` utterances as the evaluation builds them (speech.utterance, its deciding recipe)."""
    wrapped = speech.Prompts(speech.Speaker("probe", "recorded", "", "eval", RATE, ("files",)),
                             np.concatenate(prompts).astype(np.float32),
                             np.stack([np.cumsum([0] + [len(p) for p in prompts[:-1]]),
                                       np.cumsum([len(p) for p in prompts])], axis=1),
                             [str(i) for i in range(len(prompts))], [RATE] * len(prompts), [RATE // 2] * len(prompts))
    rng = np.random.default_rng(seed)
    order = [int(i) for i in rng.permutation(len(prompts))]
    out = []
    while order and len(out) < count:
        out.append(speech.utterance(wrapped, rng, seconds=speech.EVAL_SECONDS["deciding"], gap=(0.15, 0.25), order=order))
    return out


def probe(name):
    language, split, paths = talker_files(name)
    files = [speech.decode(p).astype(np.float64) for p in paths]
    floors = np.array([speech.file_floor_db(x - np.mean(x)) for x in files])
    floors = floors[np.isfinite(floors)]
    trimmed = [speech.trim(x) for x in files]
    raw = [p for p in trimmed if len(p) >= 0.15 * RATE]
    gated = [speech.trim(speech.gate(x - np.mean(x))) for x in files]
    gated = [p for p in gated if len(p) >= 0.15 * RATE]
    score = CleanPESQ()
    pesq_raw = [score(u) for u in utterances(raw)] if raw else []
    pesq_gated = [score(u) for u in utterances(gated)] if gated else []
    return dict(name=name, language=language, split=split, files=len(files),
                floor=float(np.median(floors)) if len(floors) else float("nan"),
                dry_share=float(np.mean(floors <= FLOOR_DB)) if len(floors) else 0.0,
                pesq_raw=float(np.mean(pesq_raw)) if pesq_raw else float("nan"),
                pesq_gated=float(np.mean(pesq_gated)) if pesq_gated else float("nan"))


def score_line(path):
    """(path, floor of the dry target in dB, RNNoise's clean-input PESQ-WB on it) of one line; the
    target is what training reads (speech.dry_target, then trimmed); NaN where nothing is left."""
    x = speech.decode(path).astype(np.float64)
    target, floor = speech.dry_target(x - np.mean(x))
    target = speech.trim(target) if target is not None else np.zeros(0)
    if len(target) < 0.5 * RATE:
        return path, floor, float("nan")
    try:
        return path, floor, float(CleanPESQ()(target))
    except NoUtterancesError:  # RNNoise left nothing PESQ finds speech in: the line fails
        return path, floor, 0.0


def score_lines(workers):
    paths = [p for package, include in LINE_SOURCES for p in speech.package_files(package, None, (".ogg",))
             if re.search(include, p)]
    with concurrent.futures.ProcessPoolExecutor(workers) as pool:
        rows = list(pool.map(score_line, paths, chunksize=8))
    with open(LINES_FILE + ".tmp", "w") as f:
        f.write("# file, dry target's floor (dB), RNNoise clean PESQ-WB (python -m hear_training.sources --lines)\n")
        for path, floor, score in rows:
            f.write(f"{path}\t{floor:.1f}\t{score:.2f}\n")
    os.replace(LINES_FILE + ".tmp", LINES_FILE)
    kept = [r for r in rows if round(r[2], 2) >= RNNOISE_CLEAN_PESQ]  # the score as the TSV holds it
    write_pick_list(kept)
    print(f"{len(kept)} of {len(rows)} lines pass (RNNoise clean PESQ-WB >= {RNNOISE_CLEAN_PESQ}); {LINES_FILE}, "
          f"{speech.PICK_LINES}")


def write_pick_list(kept):
    """The lines that pass, as the list speech.py's pick speaker reads (committed)."""
    with open(speech.PICK_LINES + ".tmp", "w") as f:
        f.write(f"# fillets-ng's Dutch dialog lines whose dry target RNNoise passes at PESQ-WB >= {RNNOISE_CLEAN_PESQ} "
                f"(python -m hear_training.sources --lines): pick.py's continuous speech\n")
        for path, _, _ in sorted(kept):
            f.write(path + "\n")
    os.replace(speech.PICK_LINES + ".tmp", speech.PICK_LINES)


def passes(row):
    """Dry as recorded (floor and RNNoise), or once gated (then RNNoise alone decides: the floor
    between words is gone, the one under the speech is what RNNoise's score weighs)."""
    return (row["floor"] <= FLOOR_DB and row["pesq_raw"] >= RNNOISE_CLEAN_PESQ) or row["pesq_gated"] >= RNNOISE_CLEAN_PESQ


def table(rows):
    lines = [f"| talker | language | split | files | floor (dB, median file) | files >= {-FLOOR_DB:.0f} dB down | "
             f"RNNoise clean PESQ-WB | gated | dry (floor <= {FLOOR_DB:.0f} dB and RNNoise >= {RNNOISE_CLEAN_PESQ}, or gated RNNoise >= {RNNOISE_CLEAN_PESQ}) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['name']} | {r['language']} | {r['split']} | {r['files']} | {r['floor']:.1f} | "
                     f"{100 * r['dry_share']:.0f} % | {r['pesq_raw']:.2f} | {r['pesq_gated']:.2f} | "
                     f"{'yes' if passes(r) else 'no'} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--talkers", default="", help="comma-separated talker names (default: every recorded one and CANDIDATES)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--output", default=os.path.join(speech.ROOT, ".build", "sources.md"))
    parser.add_argument("--lines", action="store_true", help=f"score every dialog line of LINE_SOURCES into {os.path.basename(LINES_FILE)} and stop")
    args = parser.parse_args()
    if args.lines:
        score_lines(args.workers)
        return
    names = args.talkers.split(",") if args.talkers else (
        [s.name for s in speech.speakers(kind="recorded")] + [c[0] for c in CANDIDATES])
    rows = []
    with concurrent.futures.ProcessPoolExecutor(args.workers) as pool:
        for row in pool.map(probe, names):
            rows.append(row)
            print(f"{row['name']}: floor {row['floor']:.1f} dB, RNNoise {row['pesq_raw']:.2f} / gated {row['pesq_gated']:.2f}",
                  file=sys.stderr, flush=True)
    report = table(rows) + f"\n\n{sum(map(passes, rows))} of {len(rows)} talkers are dry enough to decide on."
    print(report)
    with open(args.output, "w") as f:
        f.write(report + "\n")


if __name__ == "__main__":
    main()
