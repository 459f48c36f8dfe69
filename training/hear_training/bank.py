"""The training bank: what `make train`'s mixtures are made of, packed small enough to travel to an
accelerator with the working tree (at most 64 MiB go there in all), and unpacked there into the
caches that speech.py and data.py read, so that data.py mixes there exactly as here.

    python -m hear_training.bank pack [--out DIR] [--level L] [--budget MIB]   (here: `make train-bank`)
    python -m hear_training.bank unpack DIR                                     (there: HEAR_TRAIN_CACHE)

DIR (.build/train-bank by default) holds:
  speakers/NAME.opus  every training and validation speaker's prompts (speech.load's cache: the
                      dry targets of the recorded talkers, the TTS voices), joined, as Ogg Opus at
                      48 kHz (libsndfile through the soundfile package; --level 0.8: 91.8 min of
                      speech in 43.1 MiB with the noises). Opus is lossy: the bank's speech is not
                      bit-identical to the cache's. `pack` measures every speaker (`codec_error_db`:
                      32 bands of 1024-point frames, in active frames, within 40 dB of their frame's
                      loudest band) and writes the figures into bank.json: 0.40 dB the median of
                      the speakers' medians, 3.6 dB the worst speaker's 95th percentile. On 60 s of
                      tuxpaint's Catalan talker level 0.7 (82 kb/s) gave 0.23 / 1.6 dB, 0.8 (57 kb/s)
                      0.38 / 2.7 dB, counting word decays too: 0.7 would not fit the 64 MiB.
  noises.npz          data.py's recorded noises (hedgewars' sound effects, bucklespring's keys) as
                      float16 (rounding 66 dB under each sound's peak), compressed.
  bank.json           per speaker: its cache file, split, kind, prompt lengths, names, source rates
                      and speech tops, the scale its audio was stored at; the sizes.
The eval speakers are never packed (speech.speakers("train") and ("valid") only), nor any
reserved package.
"""

import argparse
import io
import json
import os
import sys
import time

import numpy as np

from . import data, speech

VERSION = 1
DEFAULT_OUT = os.path.join(speech.ROOT, ".build", "train-bank")


def band_levels(x):
    """32 log-spaced band powers of 1024-point Hann frames (hop 512): the measure of what the codec moved."""
    n, hop = 1024, 512
    if len(x) < n:
        return np.zeros((0, 32))
    frames = np.lib.stride_tricks.sliding_window_view(x, n)[::hop] * np.hanning(n)
    power = np.abs(np.fft.rfft(frames)) ** 2
    edges = np.unique(np.round(np.geomspace(2, 512, 33)).astype(int))
    return np.stack([power[:, edges[i]:edges[i + 1]].sum(1) for i in range(len(edges) - 1)], 1)


def codec_error_db(original, decoded):
    """|dB| differences of the bands that carry the speech: in frames within 30 dB of the loudest
    (not a word's decay, where the codec's own floor is as loud as what is left), bands within 40
    dB of their frame's loudest. Median and 95th percentile."""
    a, b = band_levels(original), band_levels(decoded)
    if not len(a):
        return 0.0, 0.0
    frame = a.sum(1)
    active = frame > np.percentile(frame, 99) * 1e-3
    kept = active[:, None] & (a > a.max(1, keepdims=True) * 1e-4) & (a > 1e-12)
    if not kept.any():
        return 0.0, 0.0
    d = np.abs(10 * np.log10(np.maximum(b[kept], 1e-30) / a[kept]))
    return float(np.median(d)), float(np.percentile(d, 95))


def pack(out, level, budget_mib):
    import soundfile
    os.makedirs(os.path.join(out, "speakers"), exist_ok=True)
    entries, started = [], time.time()
    for split in ("train", "valid"):
        for speaker in speech.speakers(split):
            prompts = speech.load(speaker)
            entry = dict(speaker=speaker.name, file=None, cache=os.path.relpath(speech.cache_path(speaker), speech.CACHE),
                         split=split, kind=speaker.kind, seconds=round(len(prompts.audio) / speech.RATE, 2), scale=1.0,
                         lengths=[int(b - a) for a, b in prompts.bounds], names=list(prompts.names),
                         rates=[float(r) for r in prompts.rates], tops=[float(t) for t in prompts.tops])
            entries.append(entry)
            if not len(prompts):
                # No prompt passed the dry cut: no file, and an empty cache there as here, so that
                # speech.load finds it instead of decoding a package the accelerator lacks.
                continue
            audio = prompts.audio
            peak = float(np.max(np.abs(audio)))
            scale = 0.99 / peak if peak > 0.99 else 1.0  # Opus takes -1...1
            name = speaker.name.replace("+", "_")
            path = os.path.join(out, "speakers", name + ".opus")
            soundfile.write(path, (audio * scale).astype(np.float32), speech.RATE, format="OGG", subtype="OPUS",
                            compression_level=level)
            decoded, _ = soundfile.read(path, dtype="float32")
            if len(decoded) != len(audio):
                sys.exit(f"{path}: {len(decoded)} samples decoded, {len(audio)} written")
            median, p95 = codec_error_db(audio, decoded / scale)
            entry.update(file=name + ".opus", scale=scale, codec_error_db=dict(median=round(median, 3), p95=round(p95, 3)))
            print(f"{speaker.name}: {len(audio) / speech.RATE:.0f} s, {os.path.getsize(path) / 1e6:.2f} MB, "
                  f"codec {median:.2f} / {p95:.2f} dB", file=sys.stderr)
    arrays = data.noise_arrays(*data.recorded_noises())
    np.savez_compressed(os.path.join(out, "noises.npz"), **{k: x.astype(np.float16) for k, x in arrays.items()})
    size = sum(os.path.getsize(os.path.join(root, f)) for root, _, files in os.walk(out) for f in files)
    seconds = sum(e["seconds"] for e in entries)
    errors = np.array([[e["codec_error_db"]["median"], e["codec_error_db"]["p95"]] for e in entries if e["file"]])
    summary = dict(version=VERSION, speech_version=speech.VERSION, noises_version=data.NOISES_VERSION,
                   opus_level=level, speakers=entries, seconds=round(seconds, 1),
                   bytes=size, kbps=round(8 * size / max(seconds, 1) / 1000, 1),
                   codec_error_db=dict(median_of_medians=round(float(np.median(errors[:, 0])), 3),
                                       worst_p95=round(float(errors[:, 1].max()), 3)))
    with open(os.path.join(out, "bank.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(f"{len(entries)} speakers, {seconds / 60:.1f} min of speech, {size / 2**20:.1f} MiB in {out} "
          f"({time.time() - started:.0f} s); codec: median {summary['codec_error_db']['median_of_medians']} dB, "
          f"worst 95th percentile {summary['codec_error_db']['worst_p95']} dB", file=sys.stderr)
    if size > budget_mib * 2**20:
        sys.exit(f"the bank is {size / 2**20:.1f} MiB, over its {budget_mib} MiB: pack with a higher --level")


def unpack(bank):
    """The bank into speech.CACHE (HEAR_TRAIN_CACHE): each speaker's prompt cache and data.py's noises."""
    import soundfile
    with open(os.path.join(bank, "bank.json")) as f:
        summary = json.load(f)
    if (summary["version"], summary["speech_version"], summary["noises_version"]) != (VERSION, speech.VERSION, data.NOISES_VERSION):
        sys.exit(f"{bank} was packed by another version of bank.py, speech.py or data.py: pack it again")
    for entry in summary["speakers"]:
        if entry["file"] is None:  # a speaker with no prompt: an empty cache
            audio, rate = np.zeros(0, np.float32), speech.RATE
        else:
            audio, rate = soundfile.read(os.path.join(bank, "speakers", entry["file"]), dtype="float32")
        if rate != speech.RATE or len(audio) != sum(entry["lengths"]):
            sys.exit(f"{entry['file']}: {len(audio)} samples at {rate} Hz, not {sum(entry['lengths'])} at {speech.RATE}")
        speech.store(os.path.join(speech.CACHE, entry["cache"]), audio / entry["scale"], entry["lengths"],
                     entry["names"], entry["rates"], entry["tops"])
    with np.load(os.path.join(bank, "noises.npz")) as stored:
        arrays = {k: stored[k].astype(np.float32) for k in stored.files}
    data.store_noises(arrays)
    print(f"{len(summary['speakers'])} speakers and the recorded noises unpacked into {speech.CACHE}", file=sys.stderr)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("pack", help="the bank from the speech cache (and the Debian packages behind it)")
    p.add_argument("--out", default=DEFAULT_OUT)
    p.add_argument("--level", type=float, default=0.8, help="Opus compression level, 0 (largest) to 1 (smallest)")
    p.add_argument("--budget", type=float, default=48, help="MiB the bank may take (the rest of the 64 travel too)")
    u = sub.add_parser("unpack", help="a bank into speech.CACHE (set HEAR_TRAIN_CACHE to put it elsewhere)")
    u.add_argument("bank")
    args = parser.parse_args()
    if args.command == "pack":
        if not 0 <= args.level <= 1:
            parser.error("--level: 0 to 1")
        pack(args.out, args.level, args.budget)
    else:
        unpack(args.bank)


if __name__ == "__main__":
    main()
