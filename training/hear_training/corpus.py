"""The speech-in-noise sets, built locally and deterministically.

Two sets of speech share the same noises:
  recorded  recorded human voices held out from training (the eval speakers of speech.py), in
            groups (`build_recorded`): deciding, 12 utterances of three dry wideband talkers
            (speech.py DRY_TALKERS) x 8 noises x SNR -5, 5, 20 dB, the set the targets are measured
            on; home, 16 utterances of eight home-recorded talkers (HOME_TALKERS and a LibriVox
            reader), the deciding set until issue #34; narrowband (asterisk-prompt-es-co, 8 kHz
            GSM) and acted (hedgewars game voices), each reported apart;
  tts       Harvard sentences spoken by text-to-speech voices (flite and espeak-ng, several
            speakers, male and female), 8 noises x 6 SNRs x 2 (`build`).
Noise: synthesized (white, pink, brown, hum, fan, keyboard) or made of other voices (babble, cafe):
family a here; family b (noises_b.py) makes the same kinds differently, babble of recorded people.
Everything is at 48 kHz, float64 in [-1, 1].
"""

import hashlib
import os
import subprocess
import sys
import tempfile

import numpy as np
from scipy import signal
from scipy.io import wavfile

RATE = 48000

SENTENCES = [
    "The birch canoe slid on the smooth planks.",
    "Glue the sheet to the dark blue background.",
    "It's easy to tell the depth of a well.",
    "These days a chicken leg is a rare dish.",
    "Rice is often served in round bowls.",
    "The juice of lemons makes fine punch.",
    "The box was thrown beside the parked truck.",
    "The hogs were fed chopped corn and garbage.",
    "Four hours of steady work faced us.",
    "A large size in stockings is hard to sell.",
    "The boy was there when the sun rose.",
    "A rod is used to catch pink salmon.",
]

# (engine, voice): the talkers under test.
TALKERS = [
    ("flite", "slt"),
    ("flite", "rms"),
    ("flite", "awb"),
    ("flite", "kal16"),
    ("espeak", "en-us+f3"),
    ("espeak", "en-gb+m3"),
]

# Other voices, used only inside babble and cafe noise.
BABBLERS = [
    ("espeak", "en-us+Andrea"),
    ("espeak", "en-us+Adam"),
    ("espeak", "en-gb-scotland+f2"),
    ("espeak", "en-029+m4"),
    ("espeak", "en-gb-x-rp+f4"),
    ("espeak", "en-us+m7"),
    ("flite", "kal"),
]

BABBLE_TEXT = [
    "We should meet again next week to finish the plan for the garden and the roof.",
    "Did you see the game last night, it went on until almost midnight.",
    "I will take the train to the city and then walk over to the office.",
    "Could you pass me the salt and the pepper and maybe a little bread.",
    "The weather has been strange this year, warm one day and cold the next.",
    "She said the package would arrive on Tuesday, but it never came.",
]

NOISES = ["white", "pink", "brown", "hum", "fan", "babble", "keyboard", "cafe"]


def speak(engine, voice, text, cache):
    """One utterance at 48 kHz, leading and trailing silence trimmed."""
    key = f"{engine}-{voice}-{hashlib.sha1(text.encode()).hexdigest()[:10]}".replace("+", "_")
    path = os.path.join(cache, key + ".wav")
    if not os.path.exists(path):
        if engine == "flite":
            subprocess.run(["flite", "-voice", voice, "-t", text, "-o", path], check=True)
        else:
            subprocess.run(["espeak-ng", "-v", voice, "-s", "150", "-w", path, text], check=True)
    rate, data = wavfile.read(path)
    x = data.astype(np.float64) / 32768.0
    if x.ndim > 1:
        x = x.mean(axis=1)
    x = signal.resample_poly(x, RATE, rate)
    level = np.abs(x) > 0.01 * np.max(np.abs(x))
    first, last = np.argmax(level), len(x) - np.argmax(level[::-1])
    return x[first:last]


def active_level(x):
    """RMS over the 10 ms frames within 40 dB of the loudest (a simple active speech level)."""
    frames = len(x) // 480
    energy = np.array([np.mean(x[i * 480:(i + 1) * 480] ** 2) for i in range(frames)])
    active = energy > np.max(energy) * 1e-4
    return np.sqrt(np.mean(energy[active]))


def colored(rng, n, exponent):
    """Noise with power spectrum ~ 1/f^exponent (0 white, 1 pink, 2 brown)."""
    spectrum = np.fft.rfft(rng.standard_normal(n))
    f = np.fft.rfftfreq(n, 1 / RATE)
    f[0] = f[1]
    spectrum *= f ** (-exponent / 2)
    spectrum[f < 20] *= (f[f < 20] / 20) ** 2
    return np.fft.irfft(spectrum, n)


def hum(rng, n):
    t = np.arange(n) / RATE
    base = 50 * (1 + 0.001 * np.sin(2 * np.pi * 0.1 * t))
    phase = 2 * np.pi * np.cumsum(base) / RATE
    x = sum((1 / h) * np.sin(h * phase + rng.uniform(0, 2 * np.pi)) for h in range(1, 20, 2))
    x += 0.3 * sum((1 / h) * np.sin(h * phase) for h in range(2, 12, 2))
    return x + 0.02 * colored(rng, n, 1) / np.std(colored(rng, n, 1))


def fan(rng, n):
    t = np.arange(n) / RATE
    broadband = colored(rng, n, 1.5)
    broadband = signal.sosfilt(signal.butter(2, 4000, "low", fs=RATE, output="sos"), broadband)
    broadband /= np.std(broadband)
    blade = 118 * (1 + 0.005 * np.sin(2 * np.pi * 0.3 * t))
    phase = 2 * np.pi * np.cumsum(blade) / RATE
    tones = 0.3 * np.sin(phase) + 0.15 * np.sin(2 * phase) + 0.08 * np.sin(3 * phase)
    return broadband + tones * (1 + 0.2 * np.sin(2 * np.pi * 0.5 * t))


def keyboard(rng, n):
    x = np.zeros(n)
    position = int(0.05 * RATE)
    while position < n:
        length = int(RATE * rng.uniform(0.01, 0.03))
        burst = rng.standard_normal(length) * np.exp(-np.arange(length) / (RATE * rng.uniform(0.002, 0.006)))
        burst = signal.sosfilt(signal.butter(2, [800, 9000], "band", fs=RATE, output="sos"), burst)
        end = min(n, position + length)
        x[position:end] += rng.uniform(0.5, 1.0) * burst[: end - position]
        # The key's release, a softer click shortly after.
        release = position + int(RATE * rng.uniform(0.06, 0.12))
        if release + length < n:
            x[release:release + length] += 0.4 * burst
        position += int(RATE * rng.exponential(1 / 7)) + int(0.04 * RATE)
    return x + 0.01 * colored(rng, n, 1) / np.std(colored(rng, n, 1))


def babble(rng, n, cache, talkers=6):
    x = np.zeros(n)
    for i in range(talkers):
        engine, voice = BABBLERS[i % len(BABBLERS)]
        stream = np.concatenate([speak(engine, voice, BABBLE_TEXT[(i + k) % len(BABBLE_TEXT)], cache)
                                 for k in range(len(BABBLE_TEXT))])
        stream /= active_level(stream)
        while len(stream) < n + RATE:
            stream = np.concatenate([stream, stream])
        start = rng.integers(0, len(stream) - n)
        x += stream[start:start + n]
    return x


def cafe(rng, n, cache):
    x = babble(rng, n, cache, talkers=4)
    x /= np.std(x)
    room = colored(rng, n, 1.2)
    x += 0.5 * room / np.std(room)
    # Cutlery and dishes: decaying high partials at random moments.
    position = int(rng.uniform(0.1, 0.5) * RATE)
    while position < n:
        length = int(0.15 * RATE)
        t = np.arange(length) / RATE
        partials = sum(np.sin(2 * np.pi * f * t) for f in rng.uniform(2000, 7000, 3))
        end = min(n, position + length)
        x[position:end] += rng.uniform(0.5, 2.0) * (partials * np.exp(-t / 0.03))[: end - position]
        position += int(RATE * rng.exponential(0.6)) + int(0.1 * RATE)
    return x


def make_noise(kind, n, seed, cache):
    rng = np.random.default_rng(seed)
    if kind == "white":
        x = rng.standard_normal(n)
    elif kind == "pink":
        x = colored(rng, n, 1)
    elif kind == "brown":
        x = colored(rng, n, 2)
    elif kind == "hum":
        x = hum(rng, n)
    elif kind == "fan":
        x = fan(rng, n)
    elif kind == "keyboard":
        x = keyboard(rng, n)
    elif kind == "babble":
        x = babble(rng, n, cache)
    elif kind == "cafe":
        x = cafe(rng, n, cache)
    else:
        raise ValueError(kind)
    return x / np.sqrt(np.mean(x ** 2))


SNRS = [-5, 0, 5, 10, 15, 20]
SPEECH_LEVEL_DB = -26  # active speech level, dBFS
LEAD_IN = 1.0  # seconds of noise before the utterance (a stream that has been running)
TAIL = 0.3


def build(cache, utterances_per_condition=2):
    """Returns (noisy clips, clean-only clips, noise-only clips).

    Each noisy clip: dict(noise, snr, talker, clean, noisy, start) where `start` is the sample where
    the utterance begins (after the lead-in); metrics are computed from there on.
    """
    os.makedirs(cache, exist_ok=True)
    clips = []
    index = 0
    for kind in NOISES:
        for snr in SNRS:
            for u in range(utterances_per_condition):
                engine, voice = TALKERS[index % len(TALKERS)]
                text = SENTENCES[index % len(SENTENCES)]
                index += 1
                speech = speak(engine, voice, text, cache)
                speech *= 10 ** (SPEECH_LEVEL_DB / 20) / active_level(speech)
                lead, tail = int(LEAD_IN * RATE), int(TAIL * RATE)
                clean = np.concatenate([np.zeros(lead), speech, np.zeros(tail)])
                noise = make_noise(kind, len(clean), 1000 + index, cache)
                noise *= 10 ** ((SPEECH_LEVEL_DB - snr) / 20)
                clips.append(dict(noise=kind, snr=snr, talker=f"{engine}:{voice}", clean=clean,
                                  noisy=clean + noise, start=lead))
    clean_only = []
    for i, (engine, voice) in enumerate(TALKERS):
        speech = np.concatenate([speak(engine, voice, SENTENCES[(i + k) % len(SENTENCES)], cache) for k in range(2)])
        speech *= 10 ** (SPEECH_LEVEL_DB / 20) / active_level(speech)
        clean_only.append(dict(talker=f"{engine}:{voice}", clean=np.concatenate([np.zeros(RATE // 4), speech])))
    noise_only = []
    for i, kind in enumerate(NOISES):
        noise = make_noise(kind, 6 * RATE, 5000 + i, cache)
        noise *= 10 ** ((SPEECH_LEVEL_DB - 5) / 20)  # as loud as in a 5 dB SNR clip
        noise_only.append(dict(noise=kind, noisy=noise))
    return clips, clean_only, noise_only


RECORDED_SNRS = [-5, 5, 20]


# Noise families: "a" this file's generators, "b" noises_b.py's (written apart: other spectra, click
# shapes, harmonic structures, babble of recorded talkers). A family's clips keep the kind's name.
FAMILIES = ("a", "b")


def family_noise(family, kind, n, seed, cache):
    if family == "a":
        return make_noise(kind, n, seed, cache)
    if family == "b":
        from . import noises_b
        return noises_b.make_noise(kind, n, seed, cache)
    raise ValueError(f"noise family {family!r}: one of {FAMILIES}")


def build_recorded(cache, groups=None, family="a"):
    """The recorded-human-speech sets: returns {group: (noisy clips, clean-only clips)}, clips as
    `build` makes them, in speech.EVAL_GROUPS order (the deciding set first).

    Each group's held-out utterances (speech.py `eval_utterances`: 2.5-7 s, speakers never trained
    on nor used to pick checkpoints) x NOISES x RECORDED_SNRS, at the same speech level, lead-in and
    tail as the TTS set; noise of `family` (FAMILIES), seeds of their own (20000 + clip, counted per
    group). Clean-only: two
    utterances per speaker. The noise-only clips do not depend on speech: `build`'s.
    """
    from . import speech  # decodes into .build/train-cache

    os.makedirs(cache, exist_ok=True)
    groups = tuple(speech.EVAL_GROUPS if groups is None else groups)
    utterances = [(talker, group, x * 10 ** (SPEECH_LEVEL_DB / 20) / active_level(x))
                  for talker, group, x in speech.eval_utterances(groups)]
    lead, tail = int(LEAD_IN * RATE), int(TAIL * RATE)
    sets = {}
    for group in groups:
        mine = [(talker, x) for talker, g, x in utterances if g == group]
        clips = []
        index = 0
        for kind in NOISES:
            for snr in RECORDED_SNRS:
                for talker, utterance in mine:
                    index += 1
                    clean = np.concatenate([np.zeros(lead), utterance, np.zeros(tail)])
                    noise = family_noise(family, kind, len(clean), 20000 + index, cache)
                    noise *= 10 ** ((SPEECH_LEVEL_DB - snr) / 20)
                    clips.append(dict(noise=kind, snr=snr, talker=talker, clean=clean, noisy=clean + noise, start=lead))
        clean_only = []
        for talker in dict.fromkeys(t for t, _ in mine):
            theirs = [x for t, x in mine if t == talker][:2]
            speech_ = np.concatenate([theirs[0], np.zeros(RATE // 5)] + theirs[1:])
            speech_ *= 10 ** (SPEECH_LEVEL_DB / 20) / active_level(speech_)
            clean_only.append(dict(talker=talker, clean=np.concatenate([np.zeros(RATE // 4), speech_])))
        sets[group] = (clips, clean_only)
    return sets
