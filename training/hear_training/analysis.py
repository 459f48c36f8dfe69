"""Two measurements behind constants of the suppressor (SpeechActivity's voicing threshold, SpectralGain's bin-by-bin mask), outside the suppressor itself.

  python -m hear_training.analysis voicing   how well a pitch (the gate's voicing feature) tells a talker from
                               noise: share of frames above the threshold and the median, per noise
                               alone and for a talker's voiced frames in that noise, per SNR
  python -m hear_training.analysis mask      how wide a unity mask around a steady sinusoid must be for it to
                               keep its level through the suppressor's analysis/synthesis windows

Both model hear at 48 kHz (N = 1024, M = 128) in numpy; run with the evaluation's venv
(`make eval-deps` creates it), from the repository: .build/venv/bin/python -m hear_training.analysis voicing
"""

import os
import sys

import numpy as np

from . import corpus

N, M = 1024, 128
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


if __name__ == "__main__":
    {"voicing": voicing, "mask": mask}[sys.argv[1] if len(sys.argv) > 1 else "voicing"]()
