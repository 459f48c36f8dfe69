"""Measurements behind the suppressor's constants and its model (training/README.md).

  python -m hear_training.analysis voicing   how well a pitch (the gate's voicing feature) tells a talker from
                               noise: share of frames above the threshold and the median, per noise
                               alone and for a talker's voiced frames in that noise, per SNR
  python -m hear_training.analysis mask      how wide a unity mask around a steady sinusoid must be for it to
                               keep its level through the suppressor's analysis/synthesis windows
  python -m hear_training.analysis kept FAMILY NOISE SNR
                               how much of the noise hear, RNNoise and the training target in the
                               model's place keep in the 40 ms after each rise of the noise, under a
                               voice and away from it (12 deciding clips; needs the eval cache)
  python -m hear_training.analysis speech-kept FAMILY NOISE SNR
                               per frequency region, how much of the speech hear, RNNoise and the
                               training target in the model's place keep where the speech dominates
                               a bin, and of the noise where it dominates while somebody speaks
  python -m hear_training.analysis hedging DIR [KIND ...]
                               the committed model's band gains against their targets on a training
                               set's clips (hear-features' rows), where speech or noise dominates
  python -m hear_training.analysis deciding-gains FAMILY NOISE SNR [BLOB]
                               the same on deciding clips where the speech dominates, per region
                               (below 1.5 kHz, 1.5-4 and 4-8 kHz)

voicing and mask model hear at 48 kHz (N = 1024, M = 128) in numpy. All run with the evaluation's venv
(`make eval-deps` creates it), from the repository: .build/venv/bin/python -m hear_training.analysis voicing
"""

import os
import sys

import numpy as np

from . import corpus

N, M = 1024, 128
# The repository: the release build and the evaluation's cache lie under it.
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RATE = corpus.RATE


def analysis_window():
    """The suppressor's: a sqrt-Hann rise over N - M samples, a sqrt-Hann fall over the last M."""
    rise = N - M
    w = np.zeros(N)
    w[:rise] = np.sqrt(0.5 - 0.5 * np.cos(np.pi * np.arange(rise) / rise))
    j = np.arange(N - rise) + (rise - (N - 2 * M))
    w[rise:] = np.sqrt(0.5 - 0.5 * np.cos(np.pi * j / M))
    return w


def periodicity(x, w):
    """Per statistics update (2M samples): the 200 Hz-2 kHz band's autocorrelation peak over pitch
    lags 2.5 ms to N/2, divided by the window's own autocorrelation (SpeechActivity.swift)."""
    width = RATE / N
    low, high = int(200 / width + 0.5), int(2000 / width + 0.5)
    window_correlation = np.array([np.sum(w[:N - t] * w[t:]) for t in range(N)])
    first, last = int(0.0025 * RATE) + 1, N // 2 - 1
    out = []
    for s in range(0, len(x) - N, 2 * M):
        power = np.abs(np.fft.rfft(x[s:s + N] * w)) ** 2
        power[:low] = 0
        power[high:] = 0
        r = np.fft.irfft(power, N)
        if r[0] <= 1e-20:
            out.append(0.0)
            continue
        lags = r[first:last + 1] / r[0] * window_correlation[0] / window_correlation[first:last + 1]
        out.append(min(lags.max(), 1.0))
    return np.array(out)


def frame_energy(x):
    return np.array([np.mean(x[s + N - 2 * M:s + N] ** 2) for s in range(0, len(x) - N, 2 * M)])


def voicing(threshold=0.6):
    cache = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), ".build", "eval-cache")
    clips, clean_only, noise_only = corpus.build(cache)
    w = analysis_window()
    print(f"noise alone: share of updates with a pitch peak >= {threshold}, median")
    for clip in noise_only:
        p = periodicity(clip["noisy"], w)
        print(f"  {clip['noise']:9s} {np.mean(p >= threshold):.3f}  {np.median(p):.3f}")
    print("a talker's voiced updates (clean energy within 15 dB of its peak) in noise, by SNR: share, median")
    for kind in corpus.NOISES:
        for snr in corpus.SNRS:
            values = []
            for clip in (c for c in clips if c["noise"] == kind and c["snr"] == snr):
                p, e = periodicity(clip["noisy"], w), frame_energy(clip["clean"])
                values.append(p[e > e.max() * 10 ** -1.5])
            v = np.concatenate(values)
            print(f"  {kind:9s} {snr:+3d} dB  {np.mean(v >= threshold):.3f}  {np.median(v):.3f}")


def mask():
    w = analysis_window()
    hann = 0.5 - 0.5 * np.cos(np.pi * np.arange(2 * M) / M)
    synthesis = hann / w[N - 2 * M:]

    def level(frequency, half_width, floor):
        """Output level (dB) of a sinusoid at `frequency` (in bins) through a mask of 1 on the bins
        within `half_width` of it and `floor` elsewhere."""
        length = 16 * N
        x = np.cos(2 * np.pi * frequency * np.arange(length) / N)
        y = np.zeros(length + N)
        gains = np.full(N // 2 + 1, floor)
        centre = int(round(frequency))
        gains[centre - half_width:centre + half_width + 1] = 1
        for s in range(0, length - N, M):
            frame = np.fft.irfft(np.fft.rfft(x[s:s + N] * w) * gains, N)
            y[s + N - 2 * M:s + N] += frame[N - 2 * M:] * synthesis
        middle = slice(4 * N, length - 2 * N)
        return 10 * np.log10(np.mean(y[middle] ** 2) / np.mean(x[middle] ** 2))

    print("level change (dB) of a sinusoid on, 1/4 and 1/2 bin off a bin centre, mask floor -20 dB")
    for half_width in range(4):
        print(f"  unity over +-{half_width} bins: " + "  ".join(f"{level(100 + o, half_width, 0.1):+.2f}" for o in (0, 0.25, 0.5)))


# Delays after a rise of the noise (ms) over which `kept` sums.
KEPT_EDGES_MS = (0, 2, 4, 6, 8, 12, 20, 40)


def noise_kept(x, clean, y, hop=32, window=128):
    """Per KEPT_EDGES_MS span: the noise kept (the mask |Y| / |X| of each bin of a `window`-sample
    STFT applied to the noise's bins) and the noise there, summed after each rise of the noise by
    10 dB over its last 10 ms, split by whether a voice is within 15 ms (row 0) or not (row 1)."""
    from scipy.signal import stft
    spectra = [stft(v, nperseg=window, noverlap=window - hop)[2] for v in (x, y, clean)]
    noise = spectra[0] - spectra[2]
    mask = np.minimum(np.abs(spectra[1]) / np.maximum(np.abs(spectra[0]), 1e-9), 2)
    noise_power = (np.abs(noise) ** 2).sum(0)
    speech_power = (np.abs(spectra[2]) ** 2).sum(0)
    kept_power = (mask ** 2 * np.abs(noise) ** 2).sum(0)
    frames_10ms = int(0.01 * RATE / hop)
    before = np.convolve(noise_power, np.ones(frames_10ms) / frames_10ms, "full")[:len(noise_power)]
    before = np.concatenate([[1e-20], before[:-1]])
    rises = np.where((noise_power > 10 * before + 1e-12) & (noise_power > 1e-3 * noise_power.max()))[0]
    voice = np.convolve(speech_power > 1e-7 * speech_power.max(), np.ones(2 * int(0.015 * RATE / hop) + 1), "same") > 0
    kept, total = np.zeros((2, len(KEPT_EDGES_MS) - 1)), np.zeros((2, len(KEPT_EDGES_MS) - 1))
    last = -np.inf
    for i in rises:
        if i - last < 0.04 * RATE / hop:  # one press: the first rise of 40 ms
            continue
        last = i
        row = 0 if voice[i] else 1
        for e in range(len(KEPT_EDGES_MS) - 1):
            span = slice(i + int(KEPT_EDGES_MS[e] * RATE / 1000 / hop), i + int(KEPT_EDGES_MS[e + 1] * RATE / 1000 / hop))
            kept[row, e] += kept_power[span].sum()
            total[row, e] += noise_power[span].sum()
    return kept, total


def kept(family, noise, snr, clips=12):
    chosen, clean_only = deciding_clips(family, noise, snr, clips)
    print(f"noise kept (dB) after each rise of the noise, family {family}, {noise}, {snr} dB, {len(chosen)} clips; "
          "spans in ms after the rise: " + " ".join(f"{a}-{b}" for a, b in zip(KEPT_EDGES_MS, KEPT_EDGES_MS[1:])))
    for method in candidates():
        kept_sum, total = 0, 0
        for x, clean, y in outputs(method, chosen, clean_only):
            k, t = noise_kept(x, clean, y)
            kept_sum, total = kept_sum + k, total + t
        level = 10 * np.log10(np.maximum(kept_sum, 1e-30) / np.maximum(total, 1e-30))
        name = getattr(method, "name", type(method).__name__)
        for row, where in enumerate(("under a voice", "away from it")):
            print(f"  {name:14s} {where:14s} " + " ".join(f"{v:6.1f}" for v in level[row]))


# Frequency regions (Hz) over which `speech_kept` sums.
REGION_EDGES_HZ = (0, 500, 1500, 4000, 8000, 24000)


def speech_and_noise_kept(x, clean, y, window=N, hop=M):
    """Per REGION_EDGES_HZ region, from the mask |Y|^2 / |X|^2 of each bin of a `window`-sample
    STFT (the suppressor's own resolution): the speech kept where the speech stands 6 dB above the
    noise (sum of mask x speech power, and of the speech power), and the noise kept where the noise
    outweighs the speech in a frame with speech (the same sums for the noise)."""
    from scipy.signal import stft
    f, _, spectrum = stft(x, fs=RATE, nperseg=window, noverlap=window - hop)
    out, speech = (stft(v, fs=RATE, nperseg=window, noverlap=window - hop)[2] for v in (y, clean))
    mask = np.minimum(np.abs(out) / np.maximum(np.abs(spectrum), 1e-9), 2) ** 2
    speech_power, noise_power = np.abs(speech) ** 2, np.abs(spectrum - speech) ** 2
    dominated = speech_power > 4 * noise_power
    frames = speech_power.sum(0)
    voiced = (frames > 1e-7 * frames.max())[None, :]
    sums = np.zeros((4, len(REGION_EDGES_HZ) - 1))
    for e in range(len(REGION_EDGES_HZ) - 1):
        region = ((f >= REGION_EDGES_HZ[e]) & (f < REGION_EDGES_HZ[e + 1]))[:, None]
        speech_here, noise_here = dominated & region, ~dominated & region & voiced
        sums[:, e] = ((mask * speech_power)[speech_here].sum(), speech_power[speech_here].sum(),
                      (mask * noise_power)[noise_here].sum(), noise_power[noise_here].sum())
    return sums


def candidates():
    """hear (the release build, its EQ and compressor off), RNNoise and the band target in the
    model's place (hear-features oracle --place bands)."""
    from . import methods
    release = os.path.join(ROOT, ".build/release")
    controls = {"eq.enable": 0, "comp.enable": 0, "ns.mode": 1}
    return [methods.Hear(os.path.join(release, "libhear.so"), os.path.join(release, "hear-host"), controls),
            methods.RNNoise(), methods.Oracle(os.path.join(release, "hear-features"), "bands", controls=controls)]


def deciding_clips(family, noise, snr, clips=12):
    deciding, clean_only = corpus.build_recorded(os.path.join(ROOT, ".build/eval-cache"), ["deciding"], family)["deciding"]
    return [c for c in deciding if c["noise"] == noise and c["snr"] == int(snr)][:clips], clean_only


def outputs(method, chosen, clean_only):
    """The method's output for each clip, lined up with its input."""
    from . import evaluate
    lag = evaluate.measure_delay(method, clean_only)
    for clip in chosen:
        x, clean = clip["noisy"], clip["clean"]
        pad = np.zeros(method.rate // 5)
        yield x, clean, evaluate.align(evaluate.through(method, np.concatenate([x, pad]), np.concatenate([clean, pad])), lag, len(x))


def speech_kept(family, noise, snr, clips=12):
    """Per frequency region: how much of the speech hear, RNNoise and the band target keep where
    the speech dominates a bin, and how much of the noise where the noise dominates while somebody
    speaks (12 deciding clips of one noise and SNR)."""
    chosen, clean_only = deciding_clips(family, noise, snr, clips)
    regions = " ".join(f"{a}-{b}".rjust(10) for a, b in zip(REGION_EDGES_HZ, REGION_EDGES_HZ[1:]))
    print(f"family {family}, {noise}, {snr} dB, {len(chosen)} clips; kept (dB) per region (Hz): {regions}")
    for method in candidates():
        sums = sum(speech_and_noise_kept(*clip) for clip in outputs(method, chosen, clean_only))
        levels = 10 * np.log10(np.maximum(sums[[0, 2]], 1e-30) / np.maximum(sums[[1, 3]], 1e-30))
        name = getattr(method, "name", type(method).__name__)
        for row, what in enumerate(("speech, where it dominates", "noise, where it dominates")):
            print(f"  {name:14s} {what:27s} " + " ".join(f"{v:10.1f}" for v in levels[row]))


def hedging(directory, *kinds, clips=40):
    """Over a training set's clips with speech (DIR/manifest.json, DIR/NAME.feat), per noise kind:
    the committed model's mean band gain and the target sqrt(S / (S + N)) where the speech stands
    6 dB above the noise, where the noise outweighs the speech while somebody speaks, and where a
    transient rides within 10 dB of the voice (train.transient_steps)."""
    import json
    from . import train
    weights = train.blob_weights(train.BLOB)
    with open(os.path.join(directory, "manifest.json")) as f:
        entries = json.load(f)["clips"]
    for kind in kinds or ("white", "pink", "babble", "keyboard"):
        names = [e["clip"] for e in entries if e["type"] == "speech+noise" and not e.get("typing")
                 and kind in e.get("noises", [])][:clips]
        sums = {k: [[], []] for k in ("speech 6 dB above the noise", "noise above the speech, voiced step", "a transient on the voice")}
        for name in names:
            rows = np.fromfile(os.path.join(directory, name + ".feat"), dtype="<f4").reshape(-1, train.ROW)
            noisy, clean, noise, gain, target = model_and_target(rows, weights)
            present = noisy > 1e-10
            voiced = (clean.sum(1, keepdims=True) > 1e-7) & present
            for key, where in zip(sums, (present & (clean > 4 * noise), voiced & (noise > clean), train.transient_steps(clean, noise))):
                sums[key][0].append(gain[where])
                sums[key][1].append(target[where])
        print(f"{kind} ({len(names)} clips):")
        for key, (model, target) in sums.items():
            model, target = np.concatenate(model), np.concatenate(target)
            print(f"  {key:38s} {len(model):8d} step-bands: model {model.mean():.3f}, target {target.mean():.3f}")


def model_and_target(rows, weights):
    """From hear-features' rows: the band powers of the noisy stream, the clean speech and the
    noise, the model's band gains and the target sqrt(S / (S + N))."""
    from . import train
    bands = train.BANDS
    noisy, clean, noise = (rows[:, train.FEATURES + i * bands:train.FEATURES + (i + 1) * bands] for i in range(3))
    gain = train.reference_forward(weights, rows[:, :train.FEATURES])[:, :bands]
    return noisy, clean, noise, gain, np.sqrt(clean / np.maximum(clean + noise, 1e-20))


# Regions (Hz) over which `deciding_gains` averages the model's band gains.
GAIN_EDGES_HZ = (0, 1500, 4000, 8000)


def gains_by_region(rows_list, weights, edges=GAIN_EDGES_HZ):
    """Per region: the model's mean band gain and the target's where the speech stands 6 dB above
    the noise (hear-features' rows), and how many step-bands."""
    from . import train
    model, target = [[] for _ in edges[1:]], [[] for _ in edges[1:]]
    for rows in rows_list:
        noisy, clean, noise, gain, wanted = model_and_target(rows, weights)
        dominated = (noisy > 1e-10) & (clean > 4 * noise)
        for e in range(len(edges) - 1):
            where = dominated & ((train.CENTRES >= edges[e]) & (train.CENTRES < edges[e + 1]))[None, :]
            model[e].append(gain[where])
            target[e].append(wanted[where])
    return [(np.concatenate(m).mean(), np.concatenate(t).mean(), len(np.concatenate(m))) for m, t in zip(model, target)]


def deciding_gains(family, noise, snr, blob=None, clips=12):
    """The committed model's (or `blob`'s) band gains against the target sqrt(S / (S + N)) on
    deciding clips, where the speech dominates a band, per region: the features computed by
    hear-features from the clips written to a scratch folder."""
    import subprocess
    import tempfile
    from . import train
    weights = train.blob_weights(blob or train.BLOB)
    chosen, _ = deciding_clips(family, noise, snr, clips)
    with tempfile.TemporaryDirectory() as folder:
        for i, clip in enumerate(chosen):
            clip["clean"].astype("<f4").tofile(os.path.join(folder, f"{i:03d}-clean.f32"))
            (clip["noisy"] - clip["clean"]).astype("<f4").tofile(os.path.join(folder, f"{i:03d}-noise.f32"))
        subprocess.run([os.path.join(ROOT, ".build/release/hear-features"), folder], check=True, capture_output=True)
        rows = [np.fromfile(os.path.join(folder, f"{i:03d}.feat"), dtype="<f4").reshape(-1, train.ROW) for i in range(len(chosen))]
    print(f"family {family}, {noise}, {snr} dB, {len(chosen)} clips: band gains where the speech dominates")
    for lo, hi, (model, target, count) in zip(GAIN_EDGES_HZ, GAIN_EDGES_HZ[1:], gains_by_region(rows, weights)):
        print(f"  {lo:5d}-{hi:5d} Hz  model {model:.3f}  target {target:.3f}  ({count} step-bands)")


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else "voicing"
    {"voicing": voicing, "mask": mask, "kept": kept, "speech-kept": speech_kept,
     "hedging": hedging, "deciding-gains": deciding_gains}[command](*sys.argv[2:])
