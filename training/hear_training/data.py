"""Training and validation examples for the learned noise suppressor: pairs of speech and noise.

    python3 -m hear_training.data --split train --out DIR --clips 2000 --seconds 8 --seed 1

writes DIR/NNNNNN-clean.f32 and DIR/NNNNNN-noise.f32 (raw little-endian float32, mono, 48 kHz
or --rate, equal length; the model's input is their sum, its target the clean file) and
DIR/manifest.json (its "rate"; per clip: speakers, noise kinds, SNR, levels, augmentations, the
typing track, and `speech_top_hz`: the highest frequency its clean speech carries, the lowest top
of the prompts it holds (speech.py) times the speed, the speech's band limit and the set's rate / 2;
null without speech: train.py ignores the gain target above it). A
clip at another rate is made at 48 kHz and resampled: the suppressor's framing differs by rate (a
longer window against the hop below 32 kHz, no bands above the Nyquist frequency), so the model
sees 8 and 16 kHz streams as well. Debian python3 + numpy + scipy only; every clip is a function of (--seed, its index), so the output does not depend on the number
of workers or on which clips were generated before.

Speech comes from speech.py, by split: train clips speak with train speakers, valid clips with
valid speakers, pick clips (pick.py's continuous speech, never trained on) with the pick speaker;
babble is always made of train speakers (noise, not a target). The eval speakers are never read here.

A clip, by construction:
  - 85 % speech in noise, 10 % noise alone (clean file all zeros), 5 % clean speech (noise file
    all zeros but for the room's late reverberation, where the speech has a room); 10 % of all
    clips start with 0.2-1 s of exact digital zeros in both files (a stream starting: PipeWire
    hands a fresh source silence first).
  - Speech: utterances (2-5 s, speech.py) of one speaker separated by 0.2-1.5 s pauses; 70 % of
    clips draw a recorded speaker (weight ~ sqrt(minutes), so the two long asterisk speakers do not
    swamp the rest), 30 % a TTS voice.
  - Speech augmentation: speed (pitch and tempo together, by resampling, 0.85-1.15, on 60 %: a
    formant shift within the spread between adult talkers), spectral tilt (first-order shelf,
    +-9 dB across the band, on 50 %), RNNoise's random second-order pole-zero filter (rand_resp,
    coefficients uniform in +-0.375, on 50 %), synthetic room reverb (exponentially decaying noise,
    RT60 0.1-0.6 s, faster decay above ~2 kHz, on 50 %; the target keeps its first 50 ms (EARLY),
    the late reverberation goes into the noise file), mild clipping (0.1-1 % of samples, on 5 %;
    target clipped too).
  - Band limits: 40 % of clips are low-passed to 4, 8 or 11 kHz in BOTH files (a narrowband stream:
    the top bands are empty, and that is not noise), 15 % only the speech (a narrowband voice over
    wideband noise). The limit is a down- and up-sampling, as a real narrowband stream is.
  - Levels: active speech level -45...0 dBFS, then scaled down as a whole if the sum would peak
    above -1 dBFS (headroom; checked at the set's rate); SNR (active speech level over the clip's
    mean noise power) -5...25 dB, 30-40 dB on 10 % of clips. Noise alone: -65...-15 dBFS. The
    noise gets its own rand_resp filter on 50 % of noisy clips.
  - Real typing: on 30 % of noisy and noise-only clips, a track of recorded key presses and releases
    (bucklespring-data, one mechanical keyboard, 85 keys) on top of the background noise, in the
    noise file: bursts of 3-25 keys, 70-350 ms apart, releases 30-120 ms after their presses, the
    space bar and big keys among them, 0.5-3 s between bursts, +-4 dB per event, through a
    rand_resp filter and on half of them a room; its active level 5 dB above to 20 dB below the
    speech's (in a noise-only clip, below a level drawn as a talker's). The manifest's "typing"
    tells what it holds; "snr_db" stays that of the background noise.
  - Noise, generated here (own generators and parameter ranges, not corpus.py):
      stationary: white, pink, brown (random spectral slope), fan (broadband + blade tones),
        hum (50/60 Hz and harmonics, sometimes buzzy), hvac (rumble + air);
      non-stationary: keyboard (synthetic key down/up clicks that ring or clatter, space bar,
        typing rhythm: other keyboards than the recorded one), mouse (clicks, double clicks,
        wheel), dishes (clinks, clatter, scrapes), door (latch, slam, room tail),
        traffic (passing vehicles, engine tone glides), footsteps, sfx (recorded mechanical sounds
        from hedgewars-data: hammer, drill, steps, splash, shutter, ...; no voices);
      babble (3-8 train speakers) and cafe (reverberant babble + clatter + room noise);
    25 % of noisy clips mix two kinds; 25 % have a slowly varying noise level (+-3...10 dB).

Speed (measured on this project's 2-core machine, --workers 1, 40 clips of 8 s at 48 kHz, the
other core busy): about 200 ms a clip, plus ~8 s to load the speech cache; 3 MB a clip on disk.
speech.py builds its cache on first use (~3 min).
"""

import argparse
import json
import multiprocessing
import os
import sys
import time
from fractions import Fraction

import numpy as np
from scipy import signal

from . import speech

RATE = speech.RATE

# Hedgewars sound effects that are real-world, mechanical sounds (no voices, no game bleeps).
SFX_FILES = ["hammer", "pickhammer", "drillgun", "steps", "splash", "shutterclick", "knife_impact",
             "steam", "blowtorch", "bump", "Droplet1", "Droplet2", "Droplet3", "shotgunreload",
             "sniperreload", "graveimpact", "placed", "mineimpact", "grenadeimpact", "baseballbat",
             "roperelease"]

# Draw weights per noise kind (keyboard weighs most: it is where the classical suppressor fails).
KIND_WEIGHTS = {"white": 4, "pink": 5, "brown": 3, "fan": 6, "hum": 4, "hvac": 5,
                "keyboard": 11, "mouse": 4, "dishes": 5, "door": 3, "traffic": 5, "footsteps": 3, "sfx": 4,
                "babble": 12, "cafe": 10}

# A room's first 50 ms (direct sound and early reflections) stay in the target; the rest of the
# reverberation goes to the input only, as noise: a call's far end wants the talker, not the room.
EARLY = int(0.05 * RATE)

# Shared read-only state, loaded before the workers fork.
STATE = {}


def load_state(split):
    # (A recorded talker every file of whom keeps a floor within speech.DRY_FLOOR_DB has no prompts.)
    targets = [p for p in map(speech.load, speech.speakers(split)) if len(p)]
    babblers = targets if split == "train" else [p for p in map(speech.load, speech.speakers("train")) if len(p)]
    sfx, keys = recorded_noises()
    # Target speaker draw: weight ~ sqrt(seconds) within its kind; recorded voices 70 %, TTS 30 %.
    share = {"recorded": 0.7, "tts": 0.3}
    present = {p.speaker.kind for p in targets}
    weights = np.array([np.sqrt(p.seconds()) for p in targets])
    for kind in present:
        mask = np.array([p.speaker.kind == kind for p in targets])
        weights[mask] *= share[kind] / sum(share[k] for k in present) / weights[mask].sum()
    STATE.update(targets=targets, weights=weights / weights.sum(), babblers=babblers, sfx=sfx, keys=keys)


# The recorded noises' cache, in speech.CACHE beside the speakers' prompts (bank.py packs both):
# bump NOISES_VERSION when SFX_FILES, key_sound or load_keys change.
NOISES_VERSION = 1


def noises_path():
    return os.path.join(speech.CACHE, f"noises-v{NOISES_VERSION}.npz")


def noise_arrays(sfx, keys):
    """The recorded noises as the cache names them: sfxN, key-GROUP-N-press and -release."""
    arrays = {f"sfx{i}": x for i, x in enumerate(sfx)}
    for group, pairs in keys.items():
        for i, (press, release) in enumerate(pairs):
            arrays[f"key-{group}-{i}-press"] = press
            arrays[f"key-{group}-{i}-release"] = release
    return arrays


def store_noises(arrays):
    """The recorded noises' cache (`noise_arrays`' names, float32), written whole, then renamed into place."""
    path = noises_path()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    np.savez_compressed(path + ".tmp.npz", **{k: np.asarray(x, dtype=np.float32) for k, x in arrays.items()})
    os.replace(path + ".tmp.npz", path)


def recorded_noises():
    """The hedgewars sound effects (trimmed) and the bucklespring keys (`load_keys`), float32, from
    their packages on first use, then from the cache."""
    path = noises_path()
    if not os.path.exists(path):
        sfx = []
        for source in speech.package_files("hedgewars-data", None, (".ogg",)):
            if "/voices/" not in source and os.path.basename(source)[:-4] in SFX_FILES:
                x = speech.trim(speech.decode(source), floor_db=-50)
                if len(x):
                    sfx.append(x.astype(np.float32))
        store_noises(noise_arrays(sfx, load_keys()))
    with np.load(path) as stored:
        sfx = [stored[f"sfx{i}"].astype(np.float32) for i in range(sum(k.startswith("sfx") for k in stored.files))]
        keys = {"letters": [], "space": [], "big": []}
        for group in keys:
            i = 0
            while f"key-{group}-{i}-press" in stored.files:
                keys[group].append((stored[f"key-{group}-{i}-press"].astype(np.float32),
                                    stored[f"key-{group}-{i}-release"].astype(np.float32)))
                i += 1
    return sfx, keys


# bucklespring-data: one IBM Model M keyboard recorded key by key, "%02x-%d.wav" = the Linux evdev key
# code in hex and the event (1 press, 0 release). Keys played apart from the letters: the space bar
# and the big keys (enter, backspace, both shifts).
SPACE_KEY = 0x39
BIG_KEYS = {0x1C, 0x0E, 0x2A, 0x36}


def key_sound(x):
    """One key file (starting at the event, padded to 0.33 s) cut after its sound has decayed
    55 dB below its peak, with a 3 ms fade-out; DC removed."""
    x = x.astype(np.float64) - np.mean(x)
    envelope = np.convolve(x ** 2, np.ones(48) / 48, mode="same")
    loud = np.nonzero(envelope > envelope.max() * 10 ** (-55 / 10))[0]
    end = min(len(x), loud[-1] + 1 + int(0.003 * RATE))
    y = x[:end].copy()
    k = min(int(0.003 * RATE), len(y) // 2)
    y[len(y) - k:] *= np.linspace(1.0, 0.0, k)
    return (y / np.max(np.abs(y))).astype(np.float32)


def load_keys():
    """{"letters": [(press, release)], "space": [...], "big": [...]} from bucklespring-data."""
    files = {}
    for path in speech.package_files("bucklespring-data", None, (".wav",)):
        code, event = os.path.basename(path)[:-4].split("-")
        files.setdefault(int(code, 16), {})[int(event)] = path
    keys = {"letters": [], "space": [], "big": []}
    for code, pair in sorted(files.items()):
        if 0 not in pair or 1 not in pair:
            continue  # a key recorded without its release
        group = "space" if code == SPACE_KEY else "big" if code in BIG_KEYS else "letters"
        keys[group].append((key_sound(speech.decode(pair[1])), key_sound(speech.decode(pair[0]))))
    return keys


# --- small tools ---

def db(x):
    return 10 ** (x / 20)


def power_db(x):
    return 10 * np.log10(max(float(np.mean(x ** 2)), 1e-30))


def active_level_db(x, frame=960, floor_db=-35.0):
    """Mean power of the 20 ms frames within floor_db of the loudest (dB re full scale)."""
    n = len(x) // frame
    if n == 0:
        return -300.0
    e = np.mean(x[: n * frame].reshape(n, frame) ** 2, axis=1)
    if e.max() <= 1e-30:
        return -300.0
    return 10 * np.log10(np.mean(e[e >= e.max() * 10 ** (floor_db / 10)]))


def shaped(rng, n, exponent, low=20.0, high=None):
    """Gaussian noise with power ~ 1/f^exponent between low and high (Hz), unit RMS."""
    spectrum = np.fft.rfft(rng.standard_normal(n))
    f = np.fft.rfftfreq(n, 1 / RATE)
    gain = np.ones_like(f)
    gain[1:] = f[1:] ** (-exponent / 2)
    gain[0] = 0
    gain *= 1 / (1 + (low / np.maximum(f, 1e-3)) ** 4)  # 4th-order-ish high-pass at `low`
    if high:
        gain *= 1 / np.sqrt(1 + (f / high) ** 8)
    x = np.fft.irfft(spectrum * gain, n)
    return x / max(np.sqrt(np.mean(x ** 2)), 1e-20)


def band(x, low, high, order=2):
    sos = signal.butter(order, [low, min(high, 0.45 * RATE)], "band", fs=RATE, output="sos")
    return signal.sosfilt(sos, x)


def lowpass(x, cutoff, order=2):
    return signal.sosfilt(signal.butter(order, cutoff, "low", fs=RATE, output="sos"), x)


def resample_rate(x, rate):
    """Down to `rate` and back up to 48 kHz: what a stream at that rate carries."""
    ratio = Fraction(rate, RATE).limit_denominator(1000)
    window = ("kaiser", 9.0)  # stop band ~-90 dB: the top bands really are empty
    y = signal.resample_poly(x, ratio.numerator, ratio.denominator, window=window)
    return signal.resample_poly(y, ratio.denominator, ratio.numerator, window=window)[: len(x)]


def band_limit(x, cutoff):
    return resample_rate(x, {4000: 8000, 8000: 16000, 11025: 22050}[cutoff])


def periodic(rng, n, f0, amplitudes, wobble=0.0, wobble_rate=0.2):
    """A harmonic tone (amplitudes[k] for harmonic k+1) with a slowly drifting fundamental, from a
    one-period wavetable."""
    table_size = 4096
    phase = 2 * np.pi * np.arange(table_size) / table_size
    table = np.zeros(table_size + 1)
    for k, a in enumerate(amplitudes):
        table[:-1] += a * np.sin((k + 1) * phase + rng.uniform(0, 2 * np.pi))
    table[-1] = table[0]
    t = np.arange(n) / RATE
    f = f0 * (1 + wobble * np.sin(2 * np.pi * wobble_rate * t + rng.uniform(0, 2 * np.pi)))
    cycles = np.cumsum(f) / RATE + rng.uniform()
    position = (cycles % 1.0) * table_size
    return np.interp(position, np.arange(table_size + 1), table)


def place(out, event, at, gain=1.0):
    """Adds `event` into `out` starting at sample `at` (clipped to the buffer)."""
    if at >= len(out) or at + len(event) <= 0:
        return
    a, b = max(at, 0), min(at + len(event), len(out))
    out[a:b] += gain * event[a - at:b - at]


def decaying(rng, length, tau):
    """Noise with an exponential decay (tau seconds)."""
    t = np.arange(length) / RATE
    return rng.standard_normal(length) * np.exp(-t / tau)


def modes(rng, length, freqs, taus, amps):
    """A sum of damped sinusoids: a struck object's ring."""
    t = np.arange(length) / RATE
    out = np.zeros(length)
    for f, tau, a in zip(freqs, taus, amps):
        out += a * np.sin(2 * np.pi * f * t + rng.uniform(0, 2 * np.pi)) * np.exp(-t / tau)
    return out


def room_ir(rng, rt60, direct=True, bright=None):
    """Exponentially decaying Gaussian noise; above ~2 kHz it decays faster (air and walls absorb
    highs). Direct path at t=0 (if direct) with a random direct-to-reverberant ratio."""
    length = int(min(1.5 * rt60, 1.0) * RATE)
    t = np.arange(length) / RATE
    split = bright or rng.uniform(1500, 3000)
    low = lowpass(rng.standard_normal(length), split) * np.exp(-6.91 * t / rt60)
    high = (rng.standard_normal(length) - lowpass(rng.standard_normal(length), split)) * np.exp(-6.91 * t / (rt60 * rng.uniform(0.4, 0.8)))
    tail = low + high
    predelay = int(rng.uniform(0.002, 0.015) * RATE)
    tail[:predelay] = 0
    tail /= np.sqrt(np.sum(tail ** 2))
    ir = tail * db(-rng.uniform(-6, 8))  # direct-to-reverberant ratio -8...+6 dB
    if direct:
        ir[0] += 1.0
    return ir


def reverb(x, ir):
    return signal.fftconvolve(x, ir)[: len(x)]


def slow_envelope(rng, n):
    """A slowly varying gain (linear), +-3...10 dB: a ramp or slow swells."""
    t = np.arange(n) / RATE
    depth = rng.uniform(3, 10)
    if rng.random() < 0.4:
        curve = np.linspace(-1, 1, n) * rng.choice([-1, 1])
    else:
        curve = sum(rng.uniform(0.3, 1) * np.sin(2 * np.pi * rng.uniform(0.04, 0.4) * t + rng.uniform(0, 2 * np.pi))
                    for _ in range(2))
        curve /= max(np.max(np.abs(curve)), 1e-9)
    return db(depth * curve / 2), float(depth)


# --- noise generators: (rng, n) -> float64 array (any scale; normalized by the caller) ---

def gen_white(rng, n):
    return rng.standard_normal(n)


def gen_pink(rng, n):
    return shaped(rng, n, rng.uniform(0.8, 1.25), low=rng.uniform(15, 60))


def gen_brown(rng, n):
    return shaped(rng, n, rng.uniform(1.6, 2.3), low=rng.uniform(15, 40))


def gen_fan(rng, n):
    broad = shaped(rng, n, rng.uniform(0.3, 1.6), low=rng.uniform(30, 120), high=rng.uniform(700, 6000))
    blades = rng.integers(3, 8)
    rotation = rng.uniform(10, 50)  # Hz
    bpf = blades * rotation
    harmonics = rng.integers(1, 6)
    amps = [db(-rng.uniform(0, 12)) / (k + 1) for k in range(harmonics)]
    tones = periodic(rng, n, bpf, amps, wobble=rng.uniform(0, 0.01), wobble_rate=rng.uniform(0.05, 0.5))
    tones /= max(np.sqrt(np.mean(tones ** 2)), 1e-20)
    t = np.arange(n) / RATE
    am = 1 + rng.uniform(0, 0.3) * np.sin(2 * np.pi * rotation * t + rng.uniform(0, 2 * np.pi))
    return broad * am + db(-rng.uniform(3, 20)) * tones


def gen_hum(rng, n):
    mains = rng.choice([50.0, 60.0]) * (1 + rng.uniform(-0.004, 0.004))
    count = int(rng.integers(5, 40))
    slope = rng.uniform(0.4, 1.6)
    even = rng.uniform(0.05, 1.0)
    amps = [(k + 1) ** -slope * (even if (k + 1) % 2 == 0 else 1.0) * db(rng.uniform(-6, 0)) for k in range(count)
            if mains * (k + 1) < 0.45 * RATE]
    x = periodic(rng, n, mains, amps, wobble=rng.uniform(0, 0.002), wobble_rate=rng.uniform(0.02, 0.2))
    if rng.random() < 0.3:  # buzz: a clipped, rectified hum (ground loop through an amplifier)
        x = np.clip(x * rng.uniform(2, 8), -1, 1) + rng.uniform(0, 0.5) * np.abs(x)
    x /= max(np.sqrt(np.mean(x ** 2)), 1e-20)
    return x + db(-rng.uniform(20, 45)) * shaped(rng, n, 1.0)


def gen_hvac(rng, n):
    rumble = shaped(rng, n, rng.uniform(1.5, 2.5), low=rng.uniform(15, 30), high=rng.uniform(80, 350))
    air = band(shaped(rng, n, rng.uniform(0.5, 1.2)), rng.uniform(150, 600), rng.uniform(1500, 7000))
    air /= max(np.sqrt(np.mean(air ** 2)), 1e-20)
    x = rumble + db(rng.uniform(-15, 3)) * air
    if rng.random() < 0.5:  # the motor or compressor
        x += db(-rng.uniform(10, 25)) * periodic(rng, n, rng.uniform(20, 120), [1, 0.5, 0.2], wobble=0.003)
    return x


def click_bank(rng, count, length_s, freq_range, tau_range, excite_tau, thump=None):
    """`count` variations of one device's click: a short excitation through the device's
    resonances (shared by all clicks of one clip), each with a little random variation."""
    length = int(length_s * RATE)
    body_f = rng.uniform(*freq_range, size=rng.integers(3, 6))
    body_tau = rng.uniform(*tau_range, size=len(body_f))
    bank = []
    for _ in range(count):
        excitation = decaying(rng, length, rng.uniform(*excite_tau))
        ring = modes(rng, length, body_f * rng.uniform(0.97, 1.03, len(body_f)), body_tau,
                     rng.uniform(0.3, 1, len(body_f)))
        c = signal.fftconvolve(excitation, ring)[:length]
        c = c / max(np.max(np.abs(c)), 1e-9) + rng.uniform(0.1, 0.6) * excitation / max(np.max(np.abs(excitation)), 1e-9)
        if thump:
            c += rng.uniform(0.2, 1) * modes(rng, length, [rng.uniform(*thump)], [rng.uniform(0.004, 0.015)], [3.0])
        c = band(c, 200, 16000)
        bank.append(c / np.max(np.abs(c)))
    return bank


def burst_bank(rng, count, length_s, tau_range, ring=0.0):
    """`count` clicks of a keyboard whose keys clatter rather than ring (laptop, membrane): decaying
    noise through one band-pass per device, with a weak ring of `ring` relative strength."""
    length = int(length_s * RATE)
    low, high = rng.uniform(250, 1500), rng.uniform(4000, 15000)
    body_f = rng.uniform(1500, 8000, size=3)
    bank = []
    for _ in range(count):
        c = band(decaying(rng, length, rng.uniform(*tau_range)), low * rng.uniform(0.9, 1.1), high,
                 order=rng.integers(1, 3))
        c /= max(np.max(np.abs(c)), 1e-9)
        if ring:
            r = modes(rng, length, body_f, rng.uniform(0.001, 0.006, 3), rng.uniform(0.3, 1, 3))
            c += ring * r / max(np.max(np.abs(r)), 1e-9)
        bank.append(c / np.max(np.abs(c)))
    return bank


def gen_keyboard(rng, n):
    x = np.zeros(n)
    if rng.random() < 0.5:  # keys that ring (mechanical)
        down = click_bank(rng, 8, 0.03, (1200, 9000), (0.002, 0.012), (0.0005, 0.003), thump=(120, 450))
        up = click_bank(rng, 6, 0.025, (1500, 10000), (0.001, 0.008), (0.0003, 0.0015))
        space = click_bank(rng, 3, 0.045, (500, 4000), (0.004, 0.02), (0.001, 0.004), thump=(80, 250))
    else:  # keys that clatter (laptop, membrane)
        ring = rng.uniform(0, 0.5)
        down = burst_bank(rng, 8, 0.035, (0.0015, 0.008), ring)
        up = burst_bank(rng, 6, 0.025, (0.001, 0.004), ring)
        space = burst_bank(rng, 3, 0.05, (0.003, 0.012), ring)
    interval = rng.uniform(0.09, 0.25)  # typing speed: seconds between keys within a word
    release = rng.uniform(0.04, 0.12)
    loudness = rng.uniform(0.4, 1.0)
    position = int(rng.uniform(0, 0.8) * RATE)
    while position < n:
        for _ in range(rng.integers(2, 9)):  # one word
            gain = loudness * rng.uniform(0.5, 1.0)
            place(x, down[rng.integers(len(down))], position, gain)
            place(x, up[rng.integers(len(up))], position + int(release * rng.uniform(0.7, 1.4) * RATE),
                  gain * rng.uniform(0.15, 0.6))
            position += int(interval * rng.lognormal(0, 0.35) * RATE)
        gain = loudness * rng.uniform(0.6, 1.2)
        place(x, space[rng.integers(len(space))], position, gain)
        place(x, up[rng.integers(len(up))], position + int(release * RATE), gain * 0.3)
        position += int(interval * RATE) + (int(rng.exponential(1.2) * RATE) if rng.random() < 0.25 else 0)
    return x + db(-rng.uniform(35, 55)) * shaped(rng, n, 1.0)


def gen_mouse(rng, n):
    x = np.zeros(n)
    press = click_bank(rng, 4, 0.015, (2000, 8000), (0.001, 0.005), (0.0002, 0.0008))
    release = click_bank(rng, 4, 0.012, (2500, 9000), (0.0008, 0.004), (0.0002, 0.0006))
    position = int(rng.uniform(0, 1.5) * RATE)
    while position < n:
        if rng.random() < 0.2:  # scroll wheel: a run of small ticks
            rate = rng.uniform(12, 40)
            for k in range(rng.integers(4, 20)):
                place(x, release[rng.integers(len(release))], position + int(k / rate * RATE), rng.uniform(0.1, 0.3))
        else:
            clicks = 2 if rng.random() < 0.2 else 1
            at = position
            for _ in range(clicks):
                g = rng.uniform(0.5, 1.0)
                place(x, press[rng.integers(len(press))], at, g)
                place(x, release[rng.integers(len(release))], at + int(rng.uniform(0.05, 0.14) * RATE), g * 0.6)
                at += int(rng.uniform(0.15, 0.25) * RATE)
        position += int(rng.uniform(0.3, 3.0) * RATE)
    return x + db(-rng.uniform(40, 60)) * shaped(rng, n, 1.0)


def clink(rng, strength=1.0):
    length = int(rng.uniform(0.15, 0.6) * RATE)
    partials = rng.integers(3, 7)
    ring = modes(rng, length, rng.uniform(1500, 12000, partials), rng.uniform(0.02, 0.4, partials),
                 rng.uniform(0.2, 1, partials))
    hit = band(decaying(rng, length, rng.uniform(0.0005, 0.003)), 800, 15000)
    return strength * (ring / max(np.max(np.abs(ring)), 1e-9) + rng.uniform(0.3, 1.5) * hit / max(np.max(np.abs(hit)), 1e-9))


def gen_dishes(rng, n):
    x = np.zeros(n)
    position = int(rng.uniform(0, 1.0) * RATE)
    rate = rng.uniform(0.5, 3.0)  # events per second
    while position < n:
        r = rng.random()
        if r < 0.5:
            place(x, clink(rng), position, rng.uniform(0.3, 1.0))
        elif r < 0.8:  # clatter: a handful of quick clinks
            at = position
            for _ in range(rng.integers(3, 9)):
                place(x, clink(rng), at, rng.uniform(0.2, 0.8))
                at += int(rng.uniform(0.02, 0.12) * RATE)
        else:  # a scrape
            length = int(rng.uniform(0.15, 0.8) * RATE)
            env = np.abs(np.sin(np.linspace(0, np.pi, length))) ** rng.uniform(0.5, 2)
            scrape = band(rng.standard_normal(length), rng.uniform(800, 2500), rng.uniform(4000, 12000)) * env
            place(x, scrape / max(np.max(np.abs(scrape)), 1e-9), position, rng.uniform(0.1, 0.4))
        position += int(rng.exponential(1 / rate) * RATE) + int(0.05 * RATE)
    return x + db(-rng.uniform(30, 50)) * shaped(rng, n, 1.2)


def gen_door(rng, n):
    x = np.zeros(n)
    ir = room_ir(rng, rng.uniform(0.3, 0.8), direct=True)
    for _ in range(rng.integers(1, 3)):
        at = int(rng.uniform(0, 0.85) * n)
        event = np.zeros(int(0.5 * RATE))
        latch = click_bank(rng, 1, 0.02, (1500, 6000), (0.002, 0.01), (0.0005, 0.002))[0]
        place(event, latch, 0, rng.uniform(0.1, 0.4))
        slam_at = int(rng.uniform(0.02, 0.25) * RATE)
        length = int(0.4 * RATE)
        slam = modes(rng, length, rng.uniform(40, 130, 2), rng.uniform(0.04, 0.15, 2), [1, 0.5])
        slam += rng.uniform(0.3, 1.2) * lowpass(decaying(rng, length, rng.uniform(0.004, 0.02)), rng.uniform(2000, 8000))
        place(event, slam / np.max(np.abs(slam)), slam_at, rng.uniform(0.3, 1.0) if rng.random() < 0.5 else 1.0)
        place(x, reverb(np.concatenate([event, np.zeros(len(ir))]), ir), at)
    return x + db(-rng.uniform(35, 55)) * shaped(rng, n, 1.3)


def gen_traffic(rng, n):
    t = np.arange(n) / RATE
    x = db(-rng.uniform(6, 20)) * shaped(rng, n, rng.uniform(1.5, 2.3), low=20, high=rng.uniform(200, 800))
    for _ in range(rng.integers(1, 7)):
        center = rng.uniform(-0.1, 1.1) * n / RATE
        width = rng.uniform(0.8, 3.0)
        env = np.exp(-0.5 * ((t - center) / width) ** 2)
        if env.max() < 0.05:
            continue
        tires = band(rng.standard_normal(n), rng.uniform(200, 600), rng.uniform(1500, 4000))
        tires /= np.sqrt(np.mean(tires ** 2))
        f0 = rng.uniform(25, 110)
        doppler = rng.uniform(0.02, 0.08)
        f = f0 * (1 + doppler * -np.tanh((t - center) / (0.3 * width)))
        phase = 2 * np.pi * np.cumsum(f) / RATE
        engine = sum(db(-4 * k) * np.sin((k + 1) * phase + rng.uniform(0, 6.3)) for k in range(4))
        x += rng.uniform(0.3, 1.5) * env * (tires + db(rng.uniform(-12, 0)) * engine)
    return x


def gen_footsteps(rng, n):
    x = np.zeros(n)
    hard = rng.random() < 0.6
    period = rng.uniform(0.42, 0.7)
    position = int(rng.uniform(0, 0.5) * RATE)
    t_env = rng.random()
    while position < n:
        length = int(0.12 * RATE)
        heel = modes(rng, length, [rng.uniform(60, 200)], [rng.uniform(0.01, 0.04)], [1.0])
        heel += lowpass(decaying(rng, length, rng.uniform(0.003, 0.012)), rng.uniform(400, 1500)) * 0.8
        step = heel / max(np.max(np.abs(heel)), 1e-9)
        if hard:
            toe = band(decaying(rng, length, rng.uniform(0.002, 0.01)), 1000, rng.uniform(4000, 12000))
            step = step + rng.uniform(0.2, 0.8) * np.roll(toe / max(np.max(np.abs(toe)), 1e-9), int(rng.uniform(0.03, 0.08) * RATE))
        # A walker passing: louder in the middle of the clip (or approaching / leaving).
        u = position / n
        level = np.exp(-((u - t_env) / 0.5) ** 2)
        place(x, step, position, level * rng.uniform(0.7, 1.0))
        position += int(period * rng.uniform(0.9, 1.1) * RATE)
    return x + db(-rng.uniform(35, 55)) * shaped(rng, n, 1.2)


def gen_sfx(rng, n):
    x = np.zeros(n)
    sfx = STATE["sfx"]
    for _ in range(rng.integers(2, 8)):
        s = sfx[rng.integers(len(sfx))].astype(np.float64)
        place(x, s / max(np.max(np.abs(s)), 1e-9), int(rng.uniform(-0.05, 1.0) * n), rng.uniform(0.2, 1.0))
    return x + db(-rng.uniform(35, 55)) * shaped(rng, n, 1.0)


def rand_resp(rng):
    """RNNoise's random response: a second-order pole-zero filter, (1 + b1 z^-1 + b2 z^-2) /
    (1 + a1 z^-1 + a2 z^-2), its four coefficients uniform in +-0.375 (always stable)."""
    a1, a2, b1, b2 = rng.uniform(-0.375, 0.375, 4)
    return np.array([1.0, b1, b2]), np.array([1.0, a1, a2])


def typing_track(rng, n):
    """Real keys typed in bursts (bucklespring-data): 3-25 keys a burst, 70-350 ms between keys
    (a typist's pace per burst, jittered per key), each key's release 30-120 ms after its press, a
    space bar now and then, a big key (enter, backspace, shift) rarely, 0.5-3 s between bursts; each
    press and release +-4 dB; then a random pole-zero colouring (rand_resp), and half the time a
    room. The track (unscaled) and what it holds."""
    keys = STATE["keys"]
    x = np.zeros(n)
    position = int(rng.uniform(0, 1.5) * RATE)
    presses = bursts = 0
    while position < n:
        bursts += 1
        pace = rng.uniform(0.09, 0.25)
        for _ in range(int(rng.integers(3, 26))):
            r = rng.random()
            group = "space" if r < 0.15 and keys["space"] else "big" if r < 0.18 and keys["big"] else "letters"
            press, release = keys[group][rng.integers(len(keys[group]))]
            place(x, press, position, db(rng.uniform(-4, 4)))
            place(x, release, position + int(rng.uniform(0.03, 0.12) * RATE), db(rng.uniform(-4, 4)))
            presses += 1
            position += int(np.clip(pace * rng.lognormal(0, 0.3), 0.07, 0.35) * RATE)
        position += int(rng.uniform(0.5, 3.0) * RATE)
    b, a = rand_resp(rng)
    x = signal.lfilter(b, a, x)
    info = {"source": "bucklespring-data", "keys": presses, "bursts": bursts,
            "eq": [round(float(c), 4) for c in (*b[1:], *a[1:])]}
    if rng.random() < 0.5:
        rt60 = float(rng.uniform(0.15, 0.6))
        x = reverb(x, room_ir(rng, rt60))
        info["reverb_rt60_s"] = round(rt60, 3)
    return x, info


def speech_stream(rng, prompts, n, gap=(0.1, 1.0)):
    """One talker filling n samples (a random start inside its stream)."""
    out = np.zeros(n)
    position = -int(rng.uniform(0, 2.0) * RATE)
    while position < n:
        u = speech.utterance(prompts, rng, seconds=(1.5, 5.0), gap=(0.05, 0.25))
        place(out, u, position)
        position += len(u) + int(rng.uniform(*gap) * RATE)
    return out


def gen_babble(rng, n, exclude=None, talkers=None, room=None):
    pool = [p for p in STATE["babblers"] if p.speaker.name != exclude]
    count = int(talkers or rng.integers(3, 9))
    chosen = rng.choice(len(pool), size=min(count, len(pool)), replace=False)
    x = np.zeros(n)
    names = []
    for i in chosen:
        s = speech_stream(rng, pool[i], n)
        level = active_level_db(s)
        if level < -200:
            continue
        x += s * db(-level + rng.uniform(-4, 4))
        names.append(pool[i].speaker.name)
    if room or rng.random() < 0.5:
        x = reverb(x, room_ir(rng, room or rng.uniform(0.2, 0.7), direct=rng.random() < 0.5))
    # The room the talkers are in never falls digitally silent between their words.
    x /= max(np.sqrt(np.mean(x ** 2)), 1e-20)
    return x + db(-rng.uniform(25, 45)) * shaped(rng, n, rng.uniform(0.8, 1.6)), names


def gen_cafe(rng, n, exclude=None):
    x, names = gen_babble(rng, n, exclude, talkers=rng.integers(4, 9), room=rng.uniform(0.4, 0.9))
    x /= max(np.sqrt(np.mean(x ** 2)), 1e-20)
    dishes = gen_dishes(rng, n)
    x += db(rng.uniform(-14, -2)) * dishes / max(np.sqrt(np.mean(dishes ** 2)), 1e-20)
    room = gen_hvac(rng, n) if rng.random() < 0.5 else gen_pink(rng, n)
    x += db(rng.uniform(-20, -6)) * room / max(np.sqrt(np.mean(room ** 2)), 1e-20)
    return x, names


GENERATORS = {"white": gen_white, "pink": gen_pink, "brown": gen_brown, "fan": gen_fan, "hum": gen_hum,
              "hvac": gen_hvac, "keyboard": gen_keyboard, "mouse": gen_mouse, "dishes": gen_dishes,
              "door": gen_door, "traffic": gen_traffic, "footsteps": gen_footsteps, "sfx": gen_sfx}


def make_noise(rng, kind, n, exclude):
    """Unit-RMS noise of one kind, and the babble talkers it used."""
    if kind == "babble":
        x, names = gen_babble(rng, n, exclude)
    elif kind == "cafe":
        x, names = gen_cafe(rng, n, exclude)
    else:
        x, names = GENERATORS[kind](rng, n), []
    return x / max(np.sqrt(np.mean(x ** 2)), 1e-20), names


# --- speech ---

def tilt_filter(rng):
    """A first-order shelf: +-9 dB between lows and highs around a random pivot (~3 dB/octave
    over its transition), unity gain at 1 kHz."""
    gain = rng.uniform(-9, 9)
    pivot = rng.uniform(400, 3000)
    # H(s) = (s + wz) / (s + wp): highs over lows by `gain` dB (wz < wp for a boost).
    wz, wp = 2 * np.pi * pivot * db(-gain / 2), 2 * np.pi * pivot * db(gain / 2)
    b, a = signal.bilinear([1, wz], [1, wp], fs=RATE)
    _, h = signal.freqz(b, a, worN=[1000.0], fs=RATE)
    return b / np.abs(h[0]), a, float(gain), float(pivot)


def speed_change(x, factor):
    """Speed (pitch and tempo) by `factor` (>1 faster and higher), by resampling."""
    ratio = Fraction(1 / factor).limit_denominator(60)
    return signal.resample_poly(x, ratio.numerator, ratio.denominator), float(ratio.denominator / ratio.numerator)


def speech_track(rng, prompts, n, start, speed):
    """Utterances of one speaker separated by 0.2-1.5 s pauses, from `start` on; the speed it got
    and the top (Hz) of its speech: the lowest top of the prompts that made it into the clip,
    scaled by the speed."""
    # Built at the pre-speed length and resampled once.
    m = int(n * speed) + RATE
    out = np.zeros(m)
    position = int(start * speed)
    tops = []
    while position < m:
        used = []
        u = speech.utterance(prompts, rng, seconds=(2.0, 5.0), gap=(0.05, 0.25), used=used)
        if position < int(n * speed):
            tops += [prompts.tops[i] for i in used]
        place(out, u, position)
        position += len(u) + int(rng.uniform(0.2, 1.5) * RATE)
    if speed != 1.0:
        out, speed = speed_change(out, speed)
    top = min(tops) * speed if tops else RATE / 2
    return out[:n], speed, float(min(top, RATE / 2))


# --- one clip ---

def make_clip(task):
    seed, index, n, out_dir, rate = task
    rng = np.random.default_rng([seed, index, 0x5eec])
    info = {"clip": f"{index:06d}"}
    r = rng.random()
    kind = "noise-only" if r < 0.10 else "clean" if r < 0.15 else "speech+noise"
    info["type"] = kind
    zeros = int(rng.uniform(0.2, 1.0) * RATE) if rng.random() < 0.10 else 0
    info["zeros_s"] = zeros / RATE
    augment = {}

    # Speech.
    targets = STATE["targets"]
    prompts = targets[rng.choice(len(targets), p=STATE["weights"])]
    info["speaker"] = prompts.speaker.name
    info["speaker_kind"] = prompts.speaker.kind
    clean = np.zeros(n)
    late = np.zeros(n)  # the room's late reverberation of the speech: input, never target
    top = None  # the highest frequency the clean speech carries (Hz)
    if kind != "noise-only":
        speed = float(rng.uniform(0.85, 1.15)) if rng.random() < 0.6 else 1.0
        start = zeros + int(rng.uniform(0, 1.0) * RATE) * (rng.random() < 0.7)
        clean, speed, top = speech_track(rng, prompts, n, start, speed)
        augment["speed"] = round(speed, 4)
        if rng.random() < 0.5:
            b, a, gain, pivot = tilt_filter(rng)
            clean = signal.lfilter(b, a, clean)
            augment["tilt_db"], augment["tilt_pivot_hz"] = round(gain, 2), round(pivot)
        if rng.random() < 0.5:
            b, a = rand_resp(rng)
            clean = signal.lfilter(b, a, clean)
            augment["speech_eq"] = [round(float(c), 4) for c in (*b[1:], *a[1:])]
        if rng.random() < 0.5:
            rt60 = float(rng.uniform(0.1, 0.6))
            ir = room_ir(rng, rt60)
            early = reverb(clean, ir[:EARLY])
            late = reverb(clean, ir) - early
            clean = early
            augment["reverb_rt60_s"] = round(rt60, 3)
    else:
        info["speaker"], info["speaker_kind"] = None, None

    # Band limits.
    # (before the levels are set, so that levels and SNR are those of what the files carry).
    r = rng.random()
    both = speech_only = None
    if r < 0.40:
        both = int(rng.choice([4000, 8000, 11025]))
        augment["band_limit_hz"] = both
        clean = band_limit(clean, both) if kind != "noise-only" else clean
        late = band_limit(late, both) if late.any() else late
    elif r < 0.55 and kind != "noise-only":
        speech_only = int(rng.choice([4000, 8000]))
        augment["speech_band_limit_hz"] = speech_only
        clean = band_limit(clean, speech_only)
        late = band_limit(late, speech_only) if late.any() else late
    if top is not None:
        top = min(top, both or speech_only or RATE / 2, rate / 2)
    info["speech_top_hz"] = None if top is None else round(top)

    # Noise.
    noise = np.zeros(n)
    kinds, babblers = [], []
    if kind != "clean":
        weights = STATE.get("kind_weights", KIND_WEIGHTS)
        names = list(weights)
        p = np.array([weights[k] for k in names], float)
        kinds = [names[rng.choice(len(names), p=p / p.sum())]]
        if rng.random() < 0.25:
            second = names[rng.choice(len(names), p=p / p.sum())]
            if second != kinds[0]:
                kinds.append(second)
        for i, k in enumerate(kinds):
            x, talkers = make_noise(rng, k, n, info["speaker"])
            babblers += talkers
            noise += x * (db(rng.uniform(-10, 6)) if i else 1.0)
        if rng.random() < 0.25:
            envelope, depth = slow_envelope(rng, n)
            noise *= envelope
            augment["noise_level_swing_db"] = round(depth, 1)
        if rng.random() < 0.5:
            b, a = rand_resp(rng)
            noise = signal.lfilter(b, a, noise)
            augment["noise_eq"] = [round(float(c), 4) for c in (*b[1:], *a[1:])]
        if both:
            noise = band_limit(noise, both)
        noise /= max(np.sqrt(np.mean(noise ** 2)), 1e-20)
    info["noises"] = kinds
    info["babble_speakers"] = babblers

    # Real typing on top of the background noise (its level is set below, against the speech).
    typing, typing_info = None, None
    if kind != "clean" and rng.random() < 0.30:
        typing, typing_info = typing_track(rng, n)
        if both:
            typing = band_limit(typing, both)

    # Levels.
    if kind == "noise-only":
        noise_db = float(rng.uniform(-65, -15))
        noise *= db(noise_db)
        speech_db = snr = None
    else:
        speech_db = float(rng.uniform(-45, 0))
        level = db(speech_db - active_level_db(clean))
        clean *= level
        late *= level
        if rng.random() < 0.05:  # mild clipping of the voice (an overdriven microphone)
            threshold = np.quantile(np.abs(clean), 1 - rng.uniform(0.001, 0.01))
            if rng.random() < 0.5:
                clean = np.clip(clean, -threshold, threshold)
            else:
                clean = threshold * np.tanh(clean / threshold)
            augment["clipped_at"] = round(float(threshold), 5)
            if both or speech_only:  # the microphone clips, the narrow channel comes after
                clean = band_limit(clean, both or speech_only)
        if kind == "clean":
            snr, noise_db = None, None
        else:
            snr = float(rng.uniform(-5, 25)) if rng.random() < 0.9 else float(rng.uniform(30, 40))
            noise_db = speech_db - snr
            noise *= db(noise_db)
    if typing is not None:
        # The keys' active level (20 ms frames within 35 dB of the loudest: the keystrokes, not the
        # gaps) this far below the speech's active level; in a noise-only clip, below a level a
        # talker could have had (-45...0 dBFS, as the speech above).
        reference = speech_db if speech_db is not None else float(rng.uniform(-45, 0))
        typing_snr = float(rng.uniform(-5, 20))
        typing *= db(reference - typing_snr - active_level_db(typing))
        noise += typing
        typing_info["snr_db"] = round(typing_snr, 2)
        typing_info["active_level_dbfs"] = round(reference - typing_snr, 2)
    noise += late  # after the SNR: that is the background's, and the room is the talker's
    if zeros:
        clean[:zeros] = 0.0
        noise[:zeros] = 0.0
    headroom = 0.0
    if rate != RATE:  # a stream at another rate: made at 48 kHz, resampled as a sound card would
        ratio = Fraction(rate, RATE).limit_denominator(1000)
        clean = signal.resample_poly(clean, ratio.numerator, ratio.denominator)
        noise = signal.resample_poly(noise, ratio.numerator, ratio.denominator)
    # Peaks at most -1 dBFS (a hair below, so that the float32 files' sum stays there too).
    peak = np.max(np.abs(clean + noise)) / 0.99999
    if peak > db(-1):
        headroom = 20 * np.log10(peak / db(-1))
        clean *= db(-1) / peak
        noise *= db(-1) / peak
    info["headroom_db"] = round(headroom, 2)
    info["speech_level_dbfs"] = None if speech_db is None else round(speech_db - headroom, 2)
    info["noise_level_dbfs"] = None if noise_db is None else round(noise_db - headroom, 2)
    info["snr_db"] = None if snr is None else round(snr, 2)
    if typing_info is not None:
        typing_info["active_level_dbfs"] = round(typing_info["active_level_dbfs"] - headroom, 2)
    info["typing"] = typing_info
    info["augment"] = augment

    clean.astype("<f4").tofile(os.path.join(out_dir, f"{index:06d}-clean.f32"))
    noise.astype("<f4").tofile(os.path.join(out_dir, f"{index:06d}-noise.f32"))
    return info


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--split", choices=["train", "valid", "pick"], required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--clips", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--first", type=int, default=0, help="index of the first clip (to extend a set)")
    parser.add_argument("--workers", type=int, default=2, help="processes (at most the machine's cores)")
    parser.add_argument("--rate", type=int, default=RATE, help="sample rate of the files written (Hz)")
    parser.add_argument("--kinds", help="draw the background noise from these kinds only (comma-separated, "
                        "KIND_WEIGHTS' names), e.g. a set to fine-tune on one kind of noise")
    args = parser.parse_args()
    if args.kinds:
        chosen = args.kinds.split(",")
        unknown = [k for k in chosen if k not in KIND_WEIGHTS]
        if unknown:
            parser.error(f"--kinds: no such noise kind {', '.join(unknown)} (kinds: {', '.join(KIND_WEIGHTS)})")
        STATE["kind_weights"] = {k: KIND_WEIGHTS[k] for k in chosen}

    started = time.time()
    os.makedirs(args.out, exist_ok=True)
    load_state(args.split)
    print(f"{args.split}: {len(STATE['targets'])} speakers, {len(STATE['babblers'])} babblers, "
          f"{len(STATE['sfx'])} sound effects, {sum(len(k) for k in STATE['keys'].values())} recorded keys "
          f"({time.time() - started:.0f} s to load)", file=sys.stderr)
    n = int(round(args.seconds * RATE))
    tasks = [(args.seed, i, n, args.out, args.rate) for i in range(args.first, args.first + args.clips)]
    workers = max(1, min(os.cpu_count() or 1, args.workers))
    entries = []
    t0 = time.time()
    step = max(1, args.clips // 50)

    def progress(done):
        rate = done / max(time.time() - t0, 1e-9)
        print(f"\r{done}/{args.clips} clips, {rate:.1f} clips/s, "
              f"{(args.clips - done) / max(rate, 1e-9):.0f} s left ", end="", file=sys.stderr, flush=True)

    if workers == 1:
        for k, task in enumerate(tasks):
            entries.append(make_clip(task))
            if (k + 1) % step == 0:
                progress(k + 1)
    else:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            for k, entry in enumerate(pool.imap_unordered(make_clip, tasks, chunksize=4)):
                entries.append(entry)
                if (k + 1) % step == 0:
                    progress(k + 1)
    entries.sort(key=lambda e: e["clip"])
    manifest_path = os.path.join(args.out, "manifest.json")
    manifest = {"split": args.split, "seed": args.seed, "rate": args.rate, "seconds": args.seconds,
                "format": "raw little-endian float32, mono; input = clean + noise, target = clean",
                **({"kinds": args.kinds.split(",")} if args.kinds else {}), "clips": entries}
    if args.first and os.path.exists(manifest_path):
        with open(manifest_path) as f:
            old = json.load(f)
        if (old.get("seed"), old.get("split"), old.get("seconds"), old.get("rate", RATE)) == \
                (args.seed, args.split, args.seconds, args.rate):
            keep = {e["clip"]: e for e in old["clips"]}
            keep.update({e["clip"]: e for e in entries})
            manifest["clips"] = [keep[k] for k in sorted(keep)]
    with open(manifest_path + ".tmp", "w") as f:
        json.dump(manifest, f, indent=1)
    os.replace(manifest_path + ".tmp", manifest_path)
    elapsed = time.time() - t0
    print(f"\n{args.clips} clips of {args.seconds:g} s in {elapsed:.0f} s ({elapsed / args.clips * 1000:.0f} ms per clip, "
          f"{workers} worker(s)); {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
