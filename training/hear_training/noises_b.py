"""A second family of evaluation noises, written apart from corpus.py's (family A) and from the
training generator (data.py), so that a figure does not hang on one generator's choices.

The same eight kinds under the same names, each made differently on purpose:

  white     preamp hiss: flat to 6 kHz, then falling (a microphone amplifier into an ADC's
            anti-alias filter), its level wandering +-1.5 dB over seconds;
  pink      ventilation: slope 1/f^0.7 with a broad duct resonance drawn in 250-700 Hz and a
            weaker one in 1.2-2.5 kHz;
  brown     rumble: 1/f^1.6 above 30 Hz with slow swells (traffic through a wall, a running engine);
  hum       60 Hz mains buzz: a full-wave-rectified sine (even harmonics to 3 kHz), a saturated one (odd
            harmonics to 4 kHz) and a transformer's 120 Hz, beating slowly;
  fan       a laptop fan: blade tone drawn in 170-260 Hz drifting +-3 %, its sidebands, a bearing whine
            drawn in 2.4-4.2 kHz, and band-passed turbulence;
  babble    recorded people, not TTS: 5 talkers held out of training and of the deciding set
            (fillets-ng's Czech dialog, pocketsphinx's CMU test talkers, asterisk-prompt-es-co);
  keyboard  a laptop's membrane keys: soft two-stage presses with a low body mode (300-1500 Hz) and
            a release, in bursts of 3-12 keys at 3-9 keys a second, a louder space bar now and then;
  cafe      a room of those talkers (reverberant, RT60 0.5-0.8 s), low room rumble, cups and plates
            (inharmonic modes with long decays) and chairs scraping.

`make_noise(kind, n, seed, cache)` returns float64 at corpus.RATE with unit RMS.
"""

import functools

import numpy as np
from scipy import signal

RATE = 48000

# Recorded talkers for babble: (speech.py speaker or sources.py candidate). None of them trains the
# model (speech.py: eval split or no split), none is a deciding talker.
BABBLE_TALKERS = ["fillets-cs-m", "fillets-cs-v", "pocketsphinx-cmu", "asterisk-es-co"]


def spectrum_shaped(rng, n, gain_of_frequency):
    """Gaussian noise whose amplitude spectrum is gain_of_frequency(f) (f in Hz, array)."""
    spectrum = np.fft.rfft(rng.standard_normal(n))
    f = np.fft.rfftfreq(n, 1 / RATE)
    spectrum *= gain_of_frequency(np.maximum(f, 1.0))
    return np.fft.irfft(spectrum, n)


def wander(rng, n, depth_db, seconds):
    """A smooth random gain (linear) around 1, +-depth_db, changing over about `seconds`."""
    points = max(4, int(n / (seconds * RATE)) + 3)
    db = rng.uniform(-depth_db, depth_db, points)
    return 10 ** (np.interp(np.arange(n), np.linspace(0, n, points), db) / 20)


def resonance(f, centre, q, gain_db):
    """A broad bump of gain_db at `centre` (amplitude, on top of 1)."""
    return 1 + (10 ** (gain_db / 20) - 1) / (1 + (q * (f / centre - centre / f)) ** 2)


def hiss(rng, n):
    x = spectrum_shaped(rng, n, lambda f: 1 / np.sqrt(1 + (f / 6000) ** 4))
    return x * wander(rng, n, 1.5, 2.0)


def ventilation(rng, n):
    duct, upper = rng.uniform(250, 700), rng.uniform(1200, 2500)
    return spectrum_shaped(rng, n, lambda f: f ** -0.35 * resonance(f, duct, 1.2, 8) * resonance(f, upper, 2.0, 4)
                           * (f / 40) ** 2 / (1 + (f / 40) ** 2))


def rumble(rng, n):
    x = spectrum_shaped(rng, n, lambda f: f ** -0.8 * (f / 30) ** 3 / (1 + (f / 30) ** 3))
    return x * wander(rng, n, 4.0, 1.5)


def mains_buzz(rng, n):
    t = np.arange(n) / RATE
    phase = 2 * np.pi * 60 * t + rng.uniform(0, 2 * np.pi)
    rectified = np.abs(np.sin(phase))
    rectified = signal.sosfilt(signal.butter(2, [100, 3000], "band", fs=RATE, output="sos"), rectified)
    rectified /= np.std(rectified)
    # A saturating transformer or dimmer: a square-ish wave, odd harmonics to several kHz.
    buzz = signal.sosfilt(signal.butter(2, [150, 4000], "band", fs=RATE, output="sos"), np.tanh(4 * np.sin(phase)))
    rectified += 0.8 * buzz / np.std(buzz)
    transformer = np.sin(2 * phase) * (1 + 0.3 * np.sin(2 * np.pi * 0.23 * t))
    floor = spectrum_shaped(rng, n, lambda f: 1 / np.sqrt(f))
    return rectified + 0.7 * transformer + 0.03 * floor / np.std(floor)


def laptop_fan(rng, n):
    t = np.arange(n) / RATE
    blade = rng.uniform(170, 260) * (1 + 0.03 * np.sin(2 * np.pi * rng.uniform(0.05, 0.2) * t))
    phase = 2 * np.pi * np.cumsum(blade) / RATE
    tones = 0.4 * np.sin(phase) + 0.2 * np.sin(2 * phase + 1) + 0.1 * np.sin(1.5 * phase)  # blade pass, harmonic, a subharmonic rub
    whine_f = rng.uniform(2400, 4200)
    whine = 0.05 * np.sin(2 * np.pi * whine_f * t + 0.5 * np.sin(2 * np.pi * 3 * t))
    turbulence = spectrum_shaped(rng, n, lambda f: resonance(f, 800, 0.5, 6) / (1 + (f / 5000) ** 2) * (f / 150) / (1 + f / 150))
    return tones + whine + turbulence / np.std(turbulence)


@functools.lru_cache(maxsize=None)
def talker_prompts(name):
    """A recorded talker's prompts (sources.talker_files), trimmed, each at unit active level."""
    from . import sources, speech
    from .corpus import active_level
    _, _, paths = sources.talker_files(name)
    prompts = [speech.trim(speech.decode(p).astype(np.float64)) for p in paths]
    return tuple(p / active_level(p) for p in prompts if len(p) > 0.2 * RATE)


def talker_stream(name, n, rng, cache):
    """One recorded talker's prompts, end to end with short pauses."""
    prompts = talker_prompts(name)
    out, total = [], 0
    while total < n + RATE:
        p = prompts[rng.integers(len(prompts))]
        pause = np.zeros(int(rng.uniform(0.05, 0.4) * RATE))
        out += [p, pause]
        total += len(p) + len(pause)
    x = np.concatenate(out)
    start = rng.integers(0, len(x) - n)
    return x[start:start + n]


def recorded_babble(rng, n, cache, talkers=5):
    names = [BABBLE_TALKERS[i % len(BABBLE_TALKERS)] for i in range(talkers)]
    return sum(talker_stream(name, n, rng, cache) * rng.uniform(0.6, 1.0) for name in names)


def membrane_keys(rng, n):
    x = np.zeros(n)
    position = int(rng.uniform(0.05, 0.3) * RATE)
    while position < n:
        for _ in range(rng.integers(3, 13)):
            if position >= n:
                break
            space = rng.random() < 0.12
            length = int(RATE * 0.04)
            t = np.arange(length) / RATE
            body = rng.uniform(300, 1500)
            press = (np.sin(2 * np.pi * body * t) * np.exp(-t / rng.uniform(0.004, 0.010))
                     + 0.6 * rng.standard_normal(length) * np.exp(-t / 0.0015))
            # The second stage of the press: the key bottoms out a few ms later.
            lag = int(RATE * rng.uniform(0.003, 0.008))
            press[lag:] += 0.7 * press[: length - lag]
            strength = rng.uniform(0.4, 1.0) * (1.8 if space else 1.0)
            end = min(n, position + length)
            x[position:end] += strength * press[: end - position]
            release = position + int(RATE * rng.uniform(0.05, 0.11))
            if release + length < n:
                x[release:release + length] += 0.3 * strength * press * np.exp(-t / 0.003)
            position += int(RATE / rng.uniform(3, 9))
        position += int(RATE * rng.uniform(0.4, 2.0))
    room = spectrum_shaped(rng, n, lambda f: 1 / f)
    return x + 0.005 * room / np.std(room)


def room_ir(rng, rt60):
    length = int(rt60 * RATE)
    t = np.arange(length) / RATE
    ir = rng.standard_normal(length) * np.exp(-6.9 * t / rt60)
    ir = signal.sosfilt(signal.butter(1, 3000, "low", fs=RATE, output="sos"), ir)
    ir[0] = 3.0 * np.max(np.abs(ir))
    return ir / np.sqrt(np.sum(ir ** 2))


def restaurant(rng, n, cache):
    voices = recorded_babble(rng, n, cache, talkers=6)
    voices = signal.fftconvolve(voices, room_ir(rng, rng.uniform(0.5, 0.8)))[:n]
    voices /= np.std(voices)
    x = voices + 0.4 * rumble(rng, n) / np.std(rumble(rng, n))
    position = int(rng.uniform(0.2, 0.8) * RATE)
    while position < n:
        length = int(0.4 * RATE)
        t = np.arange(length) / RATE
        if rng.random() < 0.75:  # a cup or a plate: inharmonic modes, long decays
            event = sum(np.sin(2 * np.pi * f * t + rng.uniform(0, 6)) * np.exp(-t / rng.uniform(0.03, 0.12))
                        for f in rng.uniform(1000, 5000, 4)) * rng.uniform(0.3, 1.5)
        else:  # a chair scraping: band-passed noise with a gliding centre
            centre = np.linspace(rng.uniform(300, 800), rng.uniform(800, 2000), length)
            event = rng.standard_normal(length) * np.sin(np.pi * t / t[-1]) * 0.8
            event = signal.sosfilt(signal.butter(2, [float(centre.min()), float(centre.max())], "band", fs=RATE, output="sos"), event)
        end = min(n, position + length)
        x[position:end] += event[: end - position]
        position += int(RATE * rng.exponential(0.9)) + int(0.15 * RATE)
    return x


def make_noise(kind, n, seed, cache):
    rng = np.random.default_rng([seed, 0xB])
    makers = {"white": hiss, "pink": ventilation, "brown": rumble, "hum": mains_buzz, "fan": laptop_fan,
              "keyboard": membrane_keys}
    if kind in makers:
        x = makers[kind](rng, n)
    elif kind == "babble":
        x = recorded_babble(rng, n, cache)
    elif kind == "cafe":
        x = restaurant(rng, n, cache)
    else:
        raise ValueError(kind)
    return x / np.sqrt(np.mean(x ** 2))
