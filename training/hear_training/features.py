"""hear-features' rows computed in PyTorch, batched over clips, on the CPU or a GPU.

The noise suppressor's feature path (Sources/HearDSP/NoiseSuppression/) step by step, as
`hear-features` runs it on a clip (classical mode, recording features, the plugin's defaults): the
low-delay framing (FilterBank), the statistics bins (StatisticsBins), the noise estimate with its
minimum ceiling and relearning (NoiseEstimate), the decision-directed clean-speech estimate
(SpectralGain), the gate and the pitch (SpeechActivity), and the model's features (LearnedGains,
SpeechBands). One row per frame: the noisy stream's 163 features, then the band levels of the
noisy stream, of the clean speech and of the noise (train.py's ROW), as hear-features writes them.

What does not depend on the past runs over every frame of every clip at once (transforms, band
sums, the pitch); what does (the noise tracker, the a-priori SNR, the gate's hold, the running
level mean) runs frame by frame over the whole batch of clips. The approximations the plugin uses
(FastMath's log2 and exp2) are computed with its very operations on float32 bits.

The one source of truth stays the Swift code: `python -m hear_training.features --check DIR` runs
hear-features and this module on DIR's clips and prints how far apart every feature group is;
IntegrationTests/FeatureToolTests holds both to the bounds stated there. Rounding differs (another
FFT, sums in another order, phase ramps from cos and sin rather than rotations), and where a frame
sits at a decision's edge (the gate's pitch run, the pitch lag's peak) the two can take different
branches for a frame; the bounds say how often.
"""

import argparse
import glob
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

BANDS = 32
FEATURES = 5 * BANDS + 3
ROW = FEATURES + 3 * BANDS
F32_MAX = float(np.finfo(np.float32).max)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def f32(x):
    """A Double constant as Swift's Float(...) stores it."""
    return float(np.float32(x))


# --- the plugin's fast log2 and exp2, on float32 bits (FastMath.swift) -------------------------

def fast_log2(torch, x):
    bits = x.contiguous().view(torch.int32)
    exponent = (((bits >> 23) & 0xFF) - 127).to(torch.float32)
    t = ((bits & 0x7FFFFF) | 0x3F800000).view(torch.float32) - 1
    p = 1.4418797760086843 + t * (-0.7088638759987393 + t * (0.41524096015459955
        + t * (-0.1935103909592163 + t * 0.04526550458283607)))
    return exponent + t * p


def fast_exp2(torch, x):
    held = torch.clamp(x, -125.0, 126.0)  # (FastMath holds a NaN at -125; none reaches here)
    rounded = (held + 126.5) + 8388608.0
    biased = rounded.view(torch.int32) & 0x7FFFFF
    f = held - ((rounded - 8388608.0) - 127)
    p = 0.9999998960218912 + f * (0.6931546159212211 + f * (0.24014078683039108
        + f * (0.055863258390769666 + f * (0.008946224943762626 + f * 0.00189510864141329))))
    return (biased << 23).view(torch.float32) * p


def fast_exp(torch, x):
    return fast_exp2(torch, x * 1.442695041)


def from_power_db(torch, x):
    return 3.010299956639812 * fast_log2(torch, x)


# --- what the suppressor sets up at one rate ------------------------------------------------------

def power_of_two(requested):
    n = 4
    while n < requested:
        n *= 2
    return n


def centre(b):
    """SpeechBandLayout.centre: 100 Hz apart to 500 Hz, then even on the ERB-rate scale to 20 kHz."""
    def erb(hz):
        return 21.4 * math.log10(1 + 0.00437 * hz)
    if b < 5:
        return b * 100.0
    low, high = erb(500.0), erb(20000.0)
    step = (high - low) / (BANDS - 1 - 5)
    return (math.exp((low + (b - 5) * step) / 21.4 * 2.302585092994046) - 1) / 0.00437


class Layout:
    """Every size, window, table and constant the suppressor computes at init for `rate`, in the
    order and precision the Swift code uses."""

    def __init__(self, rate):
        self.rate = rate
        m = min(max(4, int(rate / 375)), 1 << 20)
        n = power_of_two(8 * m)
        bins = n // 2 + 1
        self.hop, self.n, self.bins = m, n, bins
        frame_seconds = m / rate
        # FilterBank: the long sqrt-Hann rise, the short fall over the last hop.
        window = np.zeros(n, np.float64)
        rise = n - m
        i = np.arange(rise)
        window[:rise] = np.sqrt(0.5 - 0.5 * np.cos(np.pi * i / rise))
        j = np.arange(m, 2 * m)
        window[n - 2 * m + j] = np.sqrt(0.5 - 0.5 * np.cos(np.pi * j / m))
        self.window = window.astype(np.float32)
        w64 = self.window.astype(np.float64)
        self.power_normalization = f32(1 / (n * np.dot(w64, w64)))

        # StatisticsBins.
        width = rate / n
        speech_low = max(1, min(bins - 1, int(300 / width)))
        speech_high = max(speech_low + 1, min(bins, int(4000 / width) + 1))
        split = min(bins, speech_high)
        pairs_end = min(bins, max(split, int(8000 / width) + 1))
        first = list(range(split))
        nxt = split
        while nxt < bins and len(first) < bins:
            first.append(nxt)
            nxt = min(nxt + (2 if nxt < pairs_end else 8), bins)
        count = len(first)
        first.append(bins)
        self.split, self.stats = split, count
        self.speech_bins = (speech_low, max(speech_low, speech_high))
        self.first = first
        self.stats_width = np.array([first[s + 1] - first[s] for s in range(count)], np.float32)
        self.stats_of_bin = np.repeat(np.arange(count), self.stats_width.astype(int))

        # NoiseEstimate.
        self.presence_smoothing = f32(0.9 ** (frame_seconds / 0.016))
        self.noise_smoothing = f32(0.8 ** (frame_seconds / 0.016))
        self.warmup = max(1, int(0.03 / frame_seconds))
        self.minimum_window_frames = max(1, int(1.5 / 8 / frame_seconds))
        self.power_smoothing = f32(math.exp(-frame_seconds / 0.05))

        # SpectralGain (the clean-speech estimate only; the gains are not features).
        self.decision_directed = f32(0.9 ** (frame_seconds / 0.005333))
        # ns.sensitivity 50: the estimate read 1.25 dB low (NoiseSuppressor.set).
        self.noise_scale = f32(10 ** (((50 - 50) / 50 * 6 - 1.25) / 10))

        # SpeechActivity.
        last_bin = bins - 1

        def bin_of(hz):
            return max(1, min(last_bin, int(hz / width + 0.5)))
        single = next((s for s in range(count) if first[s + 1] - first[s] > 1), count)
        self.voicing = (bin_of(200), max(bin_of(200) + 1, min(bin_of(2000), single)))

        def window_correlation(lag):
            return float(np.dot(w64[:n - lag], w64[lag:]))
        zero = window_correlation(0)

        def lags(size):
            step = n / size
            norm = np.array([f32(zero / max(window_correlation(min(n - 1, int(j * step + 0.5))), zero * 1e-3))
                             for j in range(size // 2 + 1)], np.float32)
            lo = max(1, int(0.0025 * rate / step) + 1)
            return norm, lo, max(lo, size // 2 - 1)
        self.correlation_size = power_of_two(2 * self.voicing[1] + 2)
        self.lag_normalization, self.lag_first, self.lag_last = lags(self.correlation_size)
        self.fine_size = 4 * self.correlation_size
        self.fine_normalization, self.fine_first, self.fine_last = lags(self.fine_size)
        self.fine_samples_per_lag = f32(n / self.fine_size)
        edges = []
        for hz in (300, 1000, 2000, 4000, 8000):
            edge = bin_of(hz)
            edges.append(next((s for s in range(count) if first[s] >= edge), count))
        self.band_edges = edges
        self.hold_updates = max(1, int(0.3 / frame_seconds))
        self.voiced_updates = max(2, int(0.0107 / frame_seconds + 0.5))
        self.close_step = f32(frame_seconds / 0.1)

        # SpeechBands: triangles between centres, as one bins x bands matrix of weights.
        centres = [centre(b) for b in range(BANDS)]
        weights = np.zeros(BANDS)
        matrix = np.zeros((bins, BANDS))
        band = 0
        for k in range(bins):
            f = k * width
            while band + 1 < BANDS and centres[band + 1] <= f:
                band += 1
            share = 0.0
            if band + 1 < BANDS:
                share = (f - centres[band]) / (centres[band + 1] - centres[band])
                weights[band + 1] += share
                matrix[k, band + 1] = share
            weights[band] += 1 - share
            matrix[k, band] += 1 - share
        inverse = np.array([f32(1 / w) if w > 0 else 0.0 for w in weights], np.float32)
        self.band_has = inverse > 0
        self.band_matrix = (matrix * inverse.astype(np.float64)).astype(np.float32)

        # LearnedGains.
        self.past_frames = min(n // (2 * m) + 2, 1 << 15)
        self.refine_range = min(max(1, int(rate / 6000)), 1 << 16)
        self.refine_bins = min(bins, max(0, int(4000 * n / rate) + 1))
        self.level_scale = float(np.float32(self.power_normalization) * np.float32(n) * np.float32(48000 / rate))
        self.level_mean_rate = f32(1 - math.exp(-frame_seconds / 3.0))


# --- the steps ------------------------------------------------------------------------------------

class Steps:
    """The layout's tables on a device, and the feature path's steps as functions of tensors
    shaped (clips, frames, ...)."""

    def __init__(self, torch, layout, device):
        self.torch, self.l = torch, layout
        t = torch
        self.device = device
        self.window = t.from_numpy(layout.window).to(device)
        l = layout
        gather = np.zeros((l.bins - l.split, l.stats - l.split), np.float32)
        for s in range(l.split, l.stats):
            gather[l.first[s] - l.split:l.first[s + 1] - l.split, s - l.split] = 1
        self.gather_matrix = t.from_numpy(gather).to(device)
        self.gather_width = t.from_numpy(l.stats_width[l.split:]).to(device)
        self.stats_of_bin = t.from_numpy(l.stats_of_bin).to(device)
        self.stats_width = t.from_numpy(l.stats_width).to(device)
        self.band_matrix = t.from_numpy(l.band_matrix).to(device)
        self.band_has = t.from_numpy(l.band_has.astype(np.float32)).to(device)
        self.lag_normalization = t.from_numpy(l.lag_normalization).to(device)
        self.fine_normalization = t.from_numpy(l.fine_normalization).to(device)

    def spectra(self, x):
        """The frames' spectra (B, T, bins): frame t ends with the hop that completes at sample
        (t + 1) M, after N - M zeros before the first (the buffer the stage starts with)."""
        t, l = self.torch, self.l
        frames = x.shape[1] // l.hop
        padded = t.nn.functional.pad(x, (l.n - l.hop, 0))
        framed = padded.unfold(1, l.n, l.hop)[:, :frames]
        return t.fft.rfft(framed * self.window, dim=-1)

    @staticmethod
    def power(spectrum):
        return spectrum.real * spectrum.real + spectrum.imag * spectrum.imag

    def band_levels(self, power):
        """The bands' mean power read as a level at 48 kHz (LearnedGains' bandEnergy)."""
        return (power @ self.band_matrix) * self.l.level_scale

    def stats_power(self, power):
        l = self.l
        above = (power[..., l.split:] @ self.gather_matrix) / self.gather_width
        return self.torch.cat([power[..., :l.split], above], dim=-1)

    def noise_estimate(self, power):
        """NoiseEstimate.track frame by frame: the estimate (B, T, S) after each frame."""
        t, l = self.torch, self.l
        b, frames, s = power.shape
        noise = power.new_zeros(b, s)
        presence_average = power.new_zeros(b, s)
        smoothed = power.new_zeros(b, s)
        window_min = power.new_full((b, s), F32_MAX)
        window_max = power.new_zeros(b, s)
        past_minima = power.new_full((8, b, s), F32_MAX)
        past_minimum = power.new_full((b, s), F32_MAX)
        stuck_before = t.zeros(b, dtype=t.bool, device=power.device)
        minimum_frame, slot = 0, 0
        xi_h1 = np.float32(31.622776)
        c1 = float(np.float32(1) + xi_h1)
        c2 = float(xi_h1 / (np.float32(1) + xi_h1) * np.float32(1.442695041))
        a_p, a_n, a_s = l.presence_smoothing, l.noise_smoothing, l.power_smoothing
        out = power.new_empty(b, frames, s)
        for f in range(frames):
            p_now = power[:, f]
            if f < l.warmup:
                weight = f32(1 / (f + 1))
                noise = t.clamp_min(noise + weight * (p_now - noise), 1e-12)
                smoothed, window_min, window_max = noise.clone(), noise.clone(), noise.clone()
                out[:, f] = noise
                continue
            ratio = p_now / noise
            p = 1 / (1 + c1 * fast_exp2(t, -c2 * ratio))
            presence_average = a_p * presence_average + (1 - a_p) * p
            p = t.where(presence_average > 0.99, t.clamp_max(p, 0.99), p)
            expected = p * noise + (1 - p) * p_now
            noise = t.clamp_min(a_n * noise + (1 - a_n) * expected, 1e-12)
            # The minimum ceiling.
            smoothed = a_s * smoothed + (1 - a_s) * p_now
            window_min = t.minimum(window_min, smoothed)
            window_max = t.maximum(window_max, smoothed)
            noise = t.clamp_min(t.minimum(noise, 2.75 * t.minimum(window_min, past_minimum)), 1e-12)
            if minimum_frame < l.minimum_window_frames - 1:
                minimum_frame += 1
            else:
                minimum_frame = 0
                noise, presence_average, stuck_before = self.relearn(noise, presence_average, window_min, window_max,
                                                                     past_minima, stuck_before)
                past_minima[slot] = window_min
                window_min, window_max = smoothed.clone(), smoothed.clone()
                slot = slot + 1 if slot < 7 else 0
                past_minimum = past_minima.amin(dim=0)
            out[:, f] = noise
        return out

    def relearn(self, noise, presence_average, low, high, past_minima, stuck_before):
        """NoiseEstimate.relearnIfStuck for every clip at once (past_minima in place)."""
        t = self.torch
        active = (high > 0).float().sum(dim=1)
        stuck = ((low > 8 * noise) & (high < 4 * low)).float().sum(dim=1)
        looks = (active > 0) & (5 * stuck >= 4 * active)
        relearning = looks & stuck_before
        stuck_before = looks & ~stuck_before
        if bool(relearning.any()):
            lift = relearning[:, None] & (low > 8 * noise)
            noise = t.where(lift, 2.75 * low, noise)
            past_minima.copy_(t.where(lift[None], t.maximum(past_minima, low[None]), past_minima))
            presence_average = t.where(lift, t.zeros_like(presence_average), presence_average)
        return noise, presence_average, stuck_before

    def lsa(self, xi, gamma):
        t = self.torch
        ratio = xi / (1 + xi)
        v = t.clamp_min(ratio * gamma, 1e-6)
        exp_minus_v = fast_exp(t, -t.clamp_max(v, 80))
        series = ((((0.00107857 * v - 0.00976004) * v + 0.05519968) * v - 0.24991055) * v + 0.99999193) * v - 0.57721566
        large = exp_minus_v / v * ((v + 2.334733) * v + 0.250621) / ((v + 3.330657) * v + 1.681534)
        small = v <= 1
        e1 = t.where(small, series, large)
        factor = t.where(small, 1 / t.sqrt(v), t.ones_like(v))
        return t.clamp_max(ratio * factor * fast_exp2(t, e1 * 0.7213475204), 1)

    def clean_estimate(self, power, noise):
        """SpectralGain's clean-speech power (LSA gain² · power, two-step a-priori SNR), frame by frame."""
        t, l = self.torch, self.l
        xi_min = 0.0031622777
        alpha = l.decision_directed
        clean = power.new_zeros(power.shape[0], power.shape[2])
        out = t.empty_like(power)
        for f in range(power.shape[1]):
            inverse = 1 / (noise[:, f] * l.noise_scale)
            gamma = power[:, f] * inverse
            xi = t.clamp_min(alpha * clean * inverse + (1 - alpha) * t.clamp_min(gamma - 1, 0), xi_min)
            first = self.lsa(xi, gamma)
            xi = t.clamp_min(first * first * gamma, xi_min)
            second = self.lsa(xi, gamma)
            clean = second * second * power[:, f]
            out[:, f] = clean
        return out

    def voicing_correlation(self, power, size):
        """The inverse transform of the voicing band's power (zero elsewhere), `size` long."""
        t, l = self.torch, self.l
        lo, hi = l.voicing
        spectrum = power.new_zeros(*power.shape[:-1], size // 2 + 1)
        spectrum[..., lo:hi] = power[..., lo:hi]
        return t.fft.irfft(spectrum, n=size, dim=-1)

    def gate(self, power, noise):
        """SpeechActivity.update: openness and periodicity (B, T)."""
        t, l = self.torch, self.l
        edges = l.band_edges
        level = t.zeros(power.shape[:2], dtype=t.bool, device=power.device)
        low_level = t.zeros_like(level)
        low_excess = power.new_zeros(power.shape[:2])
        high_excess = power.new_zeros(power.shape[:2])
        voicing_excess = power.new_zeros(power.shape[:2])
        for b in range(4):
            k, to = edges[b], edges[b + 1]
            if to <= k:
                continue
            w = self.stats_width[k:to]
            p = (power[..., k:to] * w).sum(-1)
            q = (noise[..., k:to] * w).sum(-1)
            ratio = (w * power[..., k:to] / noise[..., k:to]).sum(-1) / w.sum()
            level = level | (ratio > 2.5)
            excess = t.clamp_min(p - q, 0)
            if b == 0:
                low_level, low_excess = ratio > 4, excess
            else:
                high_excess = high_excess + excess
            if b < 2:
                voicing_excess = voicing_excess + excess
        onset = low_level & (low_excess >= high_excess)
        correlation = self.voicing_correlation(power, l.correlation_size)
        values = correlation[..., l.lag_first:l.lag_last + 1] * self.lag_normalization[l.lag_first:l.lag_last + 1]
        peak, where = values.max(dim=-1)
        lag = t.where(peak > 0, where + l.lag_first, t.full_like(where, l.lag_first))
        peak = t.clamp_min(peak, 0)
        c0 = correlation[..., 0]
        periodicity = t.where(c0 > 0, t.clamp_max(peak / t.where(c0 > 0, c0, t.ones_like(c0)), 1), t.zeros_like(c0))
        voiced = level & (periodicity >= 0.6) & (voicing_excess >= 0.5 * (low_excess + high_excess - voicing_excess))
        last_lag = t.cat([t.zeros_like(lag[:, :1]), lag[:, :-1]], dim=1)
        same_pitch = (lag - last_lag).abs() * 25 <= t.clamp_min(lag, 25)
        # The hold and the run of voiced updates, frame by frame.
        b = power.shape[0]
        run = t.zeros(b, dtype=t.long, device=power.device)
        since = t.zeros_like(run)
        openness = power.new_zeros(b)
        out = power.new_empty(power.shape[:2])
        for f in range(power.shape[1]):
            counted = t.where(run < l.voiced_updates, run + 1, run)
            run = t.where(voiced[:, f], t.where((run > 0) & same_pitch[:, f], counted, t.ones_like(run)),
                          t.zeros_like(run))
            evidence = onset[:, f] | (run >= l.voiced_updates)
            holding = ~evidence & (since < l.hold_updates)
            closing = ~evidence & ~holding
            openness = t.where(evidence, t.ones_like(openness),
                               t.where(closing, t.clamp_min(openness - l.close_step, 0), openness))
            since = t.where(evidence, t.zeros_like(since), t.where(holding, since + 1, since))
            out[:, f] = openness
        return out, periodicity

    def pitch(self, power):
        """SpeechActivity.findPitch: the pitch period in samples (B, T)."""
        t, l = self.torch, self.l
        correlation = self.voicing_correlation(power, l.fine_size)[..., :l.fine_size // 2 + 1]
        raw = correlation * self.fine_normalization
        value = t.minimum(raw, correlation[..., :1])
        first, last = l.fine_first, l.fine_last
        span = value[..., first:last + 1]
        peak, where = span.max(dim=-1)
        peak_lag = t.where(peak > 0, where + first, t.full_like(where, first))
        peak = t.clamp_min(peak, 0)
        # The first local maximum within 30 % of the peak, before the peak's lag.
        j = t.arange(first, last + 1, device=power.device)
        here, before, after = value[..., first:last + 1], value[..., first - 1:last], value[..., first + 1:last + 2]
        qualifies = (here >= 0.7 * peak[..., None]) & (here >= before) & (here >= after) & (j < peak_lag[..., None])
        earliest = t.where(qualifies, j, t.full_like(j, 1 << 30)).amin(dim=-1)
        lag = t.where(earliest < (1 << 30), earliest, peak_lag)
        nxt = t.clamp_max(lag + 1, l.fine_size // 2)
        h = raw.gather(-1, lag[..., None])[..., 0]
        b = raw.gather(-1, (lag - 1)[..., None])[..., 0]
        a = raw.gather(-1, nxt[..., None])[..., 0]
        curvature = b - 2 * h + a
        safe = t.where(curvature < 0, curvature, -t.ones_like(curvature))
        offset = t.where(curvature < 0, t.clamp(0.5 * (b - a) / safe, -0.5, 0.5), t.zeros_like(curvature))
        return (lag.to(power.dtype) + offset) * l.fine_samples_per_lag

    def one_pole(self, x, rate, block=64):
        """y[0] = x[0], y[t] = y[t-1] + rate (x[t] - y[t-1]) along dim 1, a block of frames at a
        time: within a block, y = x @ L + a y_before with L[j, i] = rate (1 - rate)^(i - j), j <= i,
        and a[i] = (1 - rate)^(i + 1) (one matrix product a block in place of a step a frame)."""
        t = self.torch
        i = np.arange(block)
        decay = np.where(i[None] >= i[:, None], rate * (1 - rate) ** (i[None] - i[:, None]).clip(0), 0.0)
        weights = t.from_numpy(decay.astype(np.float32)).to(x.device)
        carry = t.from_numpy(((1 - rate) ** (i + 1)).astype(np.float32)).to(x.device)
        out = t.empty_like(x)
        out[:, 0] = x[:, 0]
        before = x[:, 0]
        for start in range(1, x.shape[1], block):
            part = x[:, start:start + block]
            width = part.shape[1]
            y = t.einsum("bj...,ji->bi...", part, weights[:width, :width]) + carry[:width].view(
                1, width, *([1] * (x.dim() - 2))) * before[:, None]
            out[:, start:start + width] = y
            before = y[:, -1]
        return out

    def features(self, spectrum, power, noise, clean, openness, periodicity, pitch):
        """LearnedGains.computeFeatures for every frame: (B, T, 163), and the noisy band levels."""
        t, l = self.torch, self.l
        b, frames, bins = power.shape
        hop, n = l.hop, l.n
        # The frame a pitch period earlier: `back` hops before, turned by the rest of the lag.
        pitch64 = pitch.double()
        back = t.clamp(t.floor(pitch64 / hop + 0.5).long(), 1, l.past_frames - 1)
        rest = pitch64 - back.double() * hop
        index = t.arange(frames, device=power.device)[None] - back
        delayed = spectrum.gather(1, index.clamp_min(0)[..., None].expand(-1, -1, bins))
        delayed = t.where((index >= 0)[..., None], delayed, t.zeros_like(delayed))
        xr, xi, pr, pi = spectrum.real, spectrum.imag, delayed.real, delayed.imag
        cross_re = xr * pr + xi * pi
        cross_im = xi * pr - xr * pi
        delayed_power = pr * pr + pi * pi
        del delayed
        # The lag within ±refineRange samples that correlates best up to 4 kHz.
        k = t.arange(bins, device=power.device, dtype=t.float64)
        rb = l.refine_bins
        best, best_sum = rest.clone(), None
        for offset in range(-l.refine_range, l.refine_range + 1):
            candidate = rest + offset
            turn = (2 * math.pi * candidate / n)[..., None] * k[:rb]
            total = (cross_re[..., :rb] * t.cos(turn).float() - cross_im[..., :rb] * t.sin(turn).float()).sum(-1)
            if best_sum is None:
                best_sum, best = total, candidate
            else:
                better = total > best_sum
                best_sum = t.where(better, total, best_sum)
                best = t.where(better, candidate, best)
        turn = (2 * math.pi * best / n)[..., None] * k
        rotated = cross_re * t.cos(turn).float() - cross_im * t.sin(turn).float()
        del turn, cross_re, cross_im
        noise_bins = noise[..., self.stats_of_bin]
        clean_bins = clean[..., self.stats_of_bin]
        m = self.band_matrix
        band_noise, band_clean = noise_bins @ m, clean_bins @ m
        del noise_bins, clean_bins
        band_delayed, band_cross, band_energy = delayed_power @ m, rotated @ m, power @ m
        has = self.band_has
        level = l.level_scale * band_energy
        level_db = t.clamp_min(from_power_db(t, t.clamp_min(level, 1e-30)), -100.0)
        feature = (level_db + 50) * 0.05
        # The running mean (3 s), from the first frame's level.
        mean = self.one_pole(feature, l.level_mean_rate)
        previous = t.cat([feature.new_full((b, 1, BANDS), -2.5), feature[:, :-1]], dim=1)
        floor = t.clamp_min(band_noise, 1e-30)
        posterior = from_power_db(t, t.clamp_min(band_energy, 1e-30) / floor) * 0.05
        priori = from_power_db(t, t.clamp_min(band_clean, 1e-30) / floor) * 0.05
        energies = band_energy * band_delayed
        correlation = t.where(energies > 1e-30,
                              t.clamp(band_cross / t.sqrt(t.where(energies > 1e-30, energies, t.ones_like(energies))), -1, 1),
                              t.zeros_like(energies))
        bands_with_bins = has.sum()
        overall = (feature * has).sum(-1) / bands_with_bins if float(bands_with_bins) > 0 else feature[..., 0] * 0 - 2.5
        out = t.cat([
            has * t.clamp(feature - mean, -2, 3),
            has * t.clamp(feature - previous, -2, 2),
            has * t.clamp(posterior, -1, 3),
            has * t.clamp(priori, -1.25, 3),
            correlation,
            openness[..., None], periodicity[..., None], overall[..., None]], dim=-1)
        return out, level


def rows(torch, clean, noise, rate, device="cpu", steps=None, part=64):
    """hear-features' rows for clips of equal length: clean and noise (B, L) float32 arrays or
    tensors; returns (B, L // hop, ROW) float32 on `device`. The frame-by-frame steps run over all
    B clips at once (their cost is mostly one kernel launch an operation a frame, whatever B is);
    the transforms and the features run `part` clips at a time (their tensors are bins wide), the
    spectra computed twice rather than kept."""
    t = torch
    steps = steps or Steps(t, Layout(rate), t.device(device))
    clean = t.as_tensor(clean, dtype=t.float32)
    noise = t.as_tensor(noise, dtype=t.float32)
    b, frames = clean.shape[0], clean.shape[1] // steps.l.hop
    with t.no_grad():
        out = t.empty(b, frames, ROW, device=steps.device)
        stats = t.empty(b, frames, steps.l.stats, device=steps.device)
        pitch = t.empty(b, frames, device=steps.device)
        for lo in range(0, b, part):
            c, n = clean[lo:lo + part].to(steps.device), noise[lo:lo + part].to(steps.device)
            out[lo:lo + part, :, FEATURES + BANDS:FEATURES + 2 * BANDS] = steps.band_levels(steps.power(steps.spectra(c)))
            out[lo:lo + part, :, FEATURES + 2 * BANDS:] = steps.band_levels(steps.power(steps.spectra(n)))
            stats[lo:lo + part] = steps.stats_power(steps.power(steps.spectra(c + n)))
            pitch[lo:lo + part] = steps.pitch(stats[lo:lo + part])
        noise_estimate = steps.noise_estimate(stats)
        clean_estimate = steps.clean_estimate(stats, noise_estimate)
        openness, periodicity = steps.gate(stats, noise_estimate)
        del stats
        for lo in range(0, b, part):
            c, n = clean[lo:lo + part].to(steps.device), noise[lo:lo + part].to(steps.device)
            spectrum = steps.spectra(c + n)
            s = slice(lo, lo + part)
            features, levels = steps.features(spectrum, steps.power(spectrum), noise_estimate[s], clean_estimate[s],
                                              openness[s], periodicity[s], pitch[s])
            out[s, :, :FEATURES] = features
            out[s, :, FEATURES:FEATURES + BANDS] = levels
        return out


# --- the check against hear-features ------------------------------------------------------------

GROUPS = [("level", 0, 32), ("level change", 32, 64), ("posterior SNR", 64, 96), ("a-priori SNR", 96, 128),
          ("pitch correlation", 128, 160), ("gate openness", 160, 161), ("periodicity", 161, 162),
          ("frame level", 162, 163)]


# What --check holds the two to (IntegrationTests/FeatureToolTests states the same numbers): in
# every group 99.9 % of values within P999_BOUND (dB for the band levels), at most OVER_SHARE of
# them more than 0.01 apart, and the gate's openness equal everywhere.
P999_BOUND = 0.005
OVER_SHARE = 0.001


def within_bounds(report):
    """The groups of a compare() report outside the bounds, as text (empty: all within)."""
    return [f"{name}: 99.9 % within {g['p999']:.2g}, {100 * g['over']:.3f} % over 0.01"
            for name, g in report.items()
            if g["p999"] > P999_BOUND or g["over"] > (0 if name == "gate openness" else OVER_SHARE)]


def compare(ours, theirs):
    """Per group of columns: the largest difference, its 99.9th percentile, and the share of values
    more than 0.01 apart; the band levels as dB differences where the level is above -100 dB."""
    def figures(d):
        return dict(max=float(d.max()), p999=float(np.quantile(d, 0.999)), over=float(np.mean(d > 0.01)))
    report = {name: figures(np.abs(ours[:, lo:hi] - theirs[:, lo:hi]).ravel()) for name, lo, hi in GROUPS}
    for name, lo in (("noisy band level", FEATURES), ("clean band level", FEATURES + BANDS),
                     ("noise band level", FEATURES + 2 * BANDS)):
        a, b = ours[:, lo:lo + BANDS], theirs[:, lo:lo + BANDS]
        audible = b > 1e-10
        report[name] = figures(np.abs(10 * np.log10(np.maximum(a[audible], 1e-30) / b[audible]))
                               if audible.any() else np.zeros(1))
    return report


def hear_features():
    for path in (os.environ.get("HEAR_FEATURES"), os.path.join(ROOT, ".build/release/hear-features"),
                 os.path.join(ROOT, ".build/debug/hear-features")):
        if path and os.access(path, os.X_OK):
            return path
    sys.exit("no hear-features: set HEAR_FEATURES or `swift build -c release --product hear-features`")


def set_rate(directory):
    """The clips' rate: the manifest's "rate" (48 kHz without one), as hear-features reads it."""
    with open(os.path.join(directory, "manifest.json")) as f:
        return json.load(f).get("rate", 48000)


def computed(torch, directory, names, steps, batch, part=64):
    """(name, rows) for each clip `names` lists in `directory`, `batch` clips of equal length at a time."""
    by_length = {}
    for name in names:
        by_length.setdefault(os.path.getsize(os.path.join(directory, f"{name}-clean.f32")), []).append(name)
    for group in by_length.values():
        for start in range(0, len(group), batch):
            chunk = group[start:start + batch]
            clean, noise = (np.stack([np.fromfile(os.path.join(directory, f"{name}-{which}.f32"), "<f4") for name in chunk])
                            for which in ("clean", "noise"))
            if clean.shape != noise.shape:
                sys.exit(f"{directory}: a clip's clean and noise differ in length")
            yield from zip(chunk, rows(torch, clean, noise, steps.l.rate, steps=steps, part=part).cpu().numpy())


def check(directory, clips, batch, device, program):
    import torch
    rate = set_rate(directory)
    names = clip_names(directory)
    if not names:
        sys.exit(f"{directory}: no NAME-clean.f32 clips")
    chosen = [names[i] for i in np.linspace(0, len(names) - 1, min(clips, len(names))).round().astype(int)]
    chosen = sorted(set(chosen))
    work = tempfile.mkdtemp(prefix="hear-features-check-")
    try:
        with open(os.path.join(work, "manifest.json"), "w") as f:
            json.dump({"rate": rate}, f)
        for name in chosen:
            for part in ("clean", "noise"):
                os.symlink(os.path.abspath(os.path.join(directory, f"{name}-{part}.f32")),
                           os.path.join(work, f"{name}-{part}.f32"))
        started = time.time()
        subprocess.run([program, work], check=True, stdout=subprocess.DEVNULL)
        swift_seconds = time.time() - started
        theirs = {name: np.fromfile(os.path.join(work, f"{name}.feat"), "<f4").reshape(-1, ROW) for name in chosen}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    steps = Steps(torch, Layout(rate), torch.device(device))
    started = time.time()
    ours = dict(computed(torch, directory, chosen, steps, batch))
    torch_seconds = time.time() - started
    for name in chosen:
        if ours[name].shape != theirs[name].shape:
            sys.exit(f"{name}: {ours[name].shape[0]} rows here, {theirs[name].shape[0]} from hear-features")
    report = compare(np.concatenate([ours[n] for n in chosen]), np.concatenate([theirs[n] for n in chosen]))
    return dict(rate=rate, clips=len(chosen), rows=int(sum(len(ours[n]) for n in chosen)),
                hear_features_seconds=round(swift_seconds, 1), torch_seconds=round(torch_seconds, 1),
                device=device, groups=report)


def clip_names(directory):
    return sorted(os.path.basename(p)[:-len("-clean.f32")] for p in glob.glob(os.path.join(directory, "*-clean.f32")))


def write(directory, batch, device, part):
    """Every clip's rows into DIR/NAME.feat, as hear-features writes them (a .feat newer than its
    clip is kept); returns how many were written and how many were up to date."""
    import torch
    steps = Steps(torch, Layout(set_rate(directory)), torch.device(device))
    names = clip_names(directory)

    def current(name):
        feat = os.path.join(directory, f"{name}.feat")
        return os.path.exists(feat) and os.path.getmtime(feat) > max(
            os.path.getmtime(os.path.join(directory, f"{name}-{which}.f32")) for which in ("clean", "noise"))
    todo = [name for name in names if not current(name)]
    for name, r in computed(torch, directory, todo, steps, batch, part):
        path = os.path.join(directory, f"{name}.feat")
        r.astype("<f4").tofile(path + ".tmp")
        os.replace(path + ".tmp", path)
    return len(todo), len(names) - len(todo)


def main():
    parser = argparse.ArgumentParser(
        description="hear-features' rows computed in PyTorch: writes DIR/NAME.feat for every clip "
                    "DIR/NAME-clean.f32 + NAME-noise.f32 (data.py's sets), or with --check compares "
                    "them with hear-features' on some of the clips")
    parser.add_argument("directories", metavar="DIR", nargs="+",
                        help="directories of NAME-clean.f32 + NAME-noise.f32 clips with data.py's manifest.json")
    parser.add_argument("--check", action="store_true",
                        help="write nothing: run hear-features and this module on --clips clips, print how far apart "
                             "they are, and fail where that is outside the bounds")
    parser.add_argument("--clips", type=int, default=100, help="with --check: clips per directory, spread evenly over it (100)")
    parser.add_argument("--batch", type=int, default=0,
                        help="clips whose frame-by-frame steps run together (1024 on cuda, 32 on the CPU)")
    parser.add_argument("--part", type=int, default=64, help="clips transformed at once (64)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda (cpu)")
    parser.add_argument("--threads", type=int, default=0, help="PyTorch's CPU threads (0: its default)")
    parser.add_argument("--json", metavar="FILE", help="with --check: the report as JSON too")
    args = parser.parse_args()
    if args.clips < 1 or args.batch < 0 or args.part < 1:
        parser.error("--clips and --part: at least 1; --batch: at least 1 (0: the default)")
    for directory in args.directories:
        if not os.path.exists(os.path.join(directory, "manifest.json")):
            parser.error(f"{directory}: no manifest.json (data.py's sets have one)")
    import torch
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        parser.error("--device cuda: PyTorch sees no CUDA device here")
    if args.threads:
        torch.set_num_threads(args.threads)
    batch = args.batch or (1024 if args.device.startswith("cuda") else 32)
    if not args.check:
        for directory in args.directories:
            started = time.time()
            written, current = write(directory, batch, args.device, args.part)
            print(f"{directory}: {written} clips written, {current} up to date ({time.time() - started:.1f} s)")
        return
    program = hear_features()
    reports = []
    for directory in args.directories:
        report = check(directory, args.clips, batch, args.device, program)
        report["directory"] = directory
        reports.append(report)
        print(f"{directory}: {report['clips']} clips at {report['rate']} Hz, {report['rows']} rows; hear-features "
              f"{report['hear_features_seconds']} s, PyTorch ({args.device}) {report['torch_seconds']} s")
        print(f"  {'group':<20} {'largest':>9} {'99.9 %':>9} {'> 0.01':>8}")
        for name, g in report["groups"].items():
            print(f"  {name:<20} {g['max']:9.2e} {g['p999']:9.2e} {100 * g['over']:7.3f}%")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(reports, f, indent=1)
    outside = [f"{r['directory']}: {line}" for r in reports for line in within_bounds(r["groups"])]
    if outside:
        sys.exit("outside the bounds (99.9 % within {P999_BOUND}, at most {100 * OVER_SHARE} % over 0.01):\n  "
                 .format(P999_BOUND=P999_BOUND, OVER_SHARE=OVER_SHARE) + "\n  ".join(outside))


if __name__ == "__main__":
    main()
