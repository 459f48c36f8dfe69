"""Echo cancellation on a synthetic room, scored as a call's far end hears it (`make eval-echo`).

The far end (pocketsphinx-testdata's LibriVox sentences) plays through hear's speaker chain at its
defaults; what the speakers play goes through a room (a 20 ms path, then reverberation decaying by
60 dB in 0.4 s, 6 dB down) into the microphone, where another talker (the same package's card
numbers) speaks from 4 s on. hear's microphone chain runs in `hear-host bench` with the speaker
chain beside it in the same process (`-e hear_stereo -E far.f32`), so its echo canceller reads the
speaker chain's output as it would in PipeWire. Scored:

- ERLE from 2 s, far end alone: the microphone's energy over the chain's output's;
- the near end alone (the far end silent): PESQ-WB against the clean near-end speech, with and
  without hear's canceller (aec.enable 0);
- double talk (both talking, 6 s on): PESQ-WB of the near end in the raw microphone, in hear's
  output without its canceller, with it, and with its residual-echo suppressor too (aec.suppress);
- speexdsp's canceller alone (ctypes, 16-bit frames as hear feeds it) for frame lengths 128, 256
  and 512 and filters of 150, 250 and 500 ms at 48 kHz: ERLE from 2 s and the share of a core.

    python -m hear_training.echo [--plugin .build/release/libhear.so] [--output docs/results/echo.md]
"""

import argparse
import atexit
import ctypes
import glob
import os
import shutil
import subprocess
import tempfile
import time

import numpy as np
import soundfile
from pesq import pesq
from scipy.signal import fftconvolve, resample_poly

DATA = "/usr/share/pocketsphinx/test/data"
FAR = sorted(glob.glob(f"{DATA}/librivox/*.wav"))
NEAR = sorted(glob.glob(f"{DATA}/cards/*.wav"))
SECONDS = 14.0
NEAR_FROM = 4.0
METRIC_RATE = 16000


def speech(files, rate, seconds, level_db):
    """`files` joined at `rate`, repeated to `seconds`, at an RMS of `level_db` dBFS."""
    parts = []
    for path in files:
        x, r = soundfile.read(path, dtype="float64")
        parts.append(resample_poly(x if x.ndim == 1 else x[:, 0], rate, r))
    once = np.concatenate(parts)
    n = int(seconds * rate)
    x = np.tile(once, n // len(once) + 1)[:n]
    return x * 10 ** (level_db / 20) / np.sqrt(np.mean(x ** 2))


def room(rate, delay=0.02, reverberation=0.4, gain_db=-6, seed=36):
    rng = np.random.default_rng(seed)
    start = int(delay * rate)
    t = np.arange(int(1.2 * reverberation * rate)) / rate
    h = np.concatenate([np.zeros(start), [4.0], rng.uniform(-1, 1, len(t)) * np.exp(-6.9 * t / reverberation)])
    return h * 10 ** (gain_db / 20) / np.sqrt(np.sum(h ** 2))


class Host:
    def __init__(self, plugin, host):
        self.plugin, self.host = plugin, host
        self.tmp = tempfile.mkdtemp(prefix="hear-echo-")
        atexit.register(shutil.rmtree, self.tmp, ignore_errors=True)

    def run(self, x, rate, label, controls, far=None, align=True):
        """`x` through `label` (its output aligned with its input unless not `align`), `far` through a
        speaker chain beside it."""
        src, dst, far_path = (os.path.join(self.tmp, n) for n in ("in.f32", "out.f32", "far.f32"))
        x.astype(np.float32).tofile(src)
        speaker = []
        if far is not None:
            far.astype(np.float32).tofile(far_path)
            speaker = ["-e", "hear_stereo", "-E", far_path]
        done = subprocess.run([self.host, "bench", "-r", str(rate), "-b", "256", "-i", src, "-o", dst] + speaker
                              + [self.plugin, label] + [f"{k}={v}" for k, v in controls.items()],
                              check=True, capture_output=True, text=True)
        latency = next(int(float(line.split("latency=")[1])) for line in done.stderr.splitlines() if "latency=" in line)
        y = np.fromfile(dst, dtype=np.float32).astype(np.float64)[: len(x)]
        return np.concatenate([y[latency:], np.zeros(latency)]) if align else y


def wideband_pesq(reference, degraded, rate):
    return pesq(METRIC_RATE, resample_poly(reference, METRIC_RATE, rate), resample_poly(degraded, METRIC_RATE, rate), "wb")


def erle(microphone, output, rate, start=2.0):
    a = int(start * rate)
    return 10 * np.log10(np.sum(microphone[a:] ** 2) / max(np.sum(output[a:] ** 2), 1e-20))


def scene(host, rate):
    far = speech(FAR, rate, SECONDS, -26)
    near = speech(NEAR, rate, SECONDS, -26)
    near[: int(NEAR_FROM * rate)] = 0
    # What the speaker chain plays, as late as it plays it (what its tap holds), through the room.
    played = host.run(far, rate, "hear_stereo", {"chain": 2}, align=False)
    echo = fftconvolve(played, room(rate))[: len(far)]
    silent = np.zeros_like(far)
    mic = {"on": {"chain": 1}, "off": {"chain": 1, "aec.enable": 0}, "suppress": {"chain": 1, "aec.suppress": 1}}
    result = {}
    result["erle"] = erle(echo, host.run(echo, rate, "hear_mono", mic["on"], far=far), rate)
    result["erle_off"] = erle(echo, host.run(echo, rate, "hear_mono", mic["off"], far=far), rate)
    result["erle_suppress"] = erle(echo, host.run(echo, rate, "hear_mono", mic["suppress"], far=far), rate)
    a = int(NEAR_FROM * rate)
    for case in ("on", "off"):
        out = host.run(near, rate, "hear_mono", mic[case], far=silent)
        result[f"near_{case}"] = wideband_pesq(near[a:], out[a:], rate)
    both = near + echo
    b = int((NEAR_FROM + 2) * rate)
    result["talk_raw"] = wideband_pesq(near[b:], both[b:], rate)
    for case in ("on", "off", "suppress"):
        out = host.run(both, rate, "hear_mono", mic[case], far=far)
        result[f"talk_{case}"] = wideband_pesq(near[b:], out[b:], rate)
    return result


def speex_sweep(rate=48000):
    lib = ctypes.CDLL("libspeexdsp.so.1")
    lib.speex_echo_state_init.restype = ctypes.c_void_p
    far = speech(FAR, rate, 12, -26)
    echo = fftconvolve(far, room(rate))[: len(far)]
    mic = (np.clip(echo, -1, 1) * 32767).astype(np.int16)
    ref = (np.clip(far, -1, 1) * 32767).astype(np.int16)
    rows = []
    for frame in (128, 256, 512):
        for ms in (150, 250, 500):
            length = int(np.ceil(ms * rate / 1000 / frame)) * frame
            state = ctypes.c_void_p(lib.speex_echo_state_init(frame, length))
            r = ctypes.c_int(rate)
            lib.speex_echo_ctl(state, 24, ctypes.byref(r))  # SPEEX_ECHO_SET_SAMPLING_RATE
            n = len(mic) // frame * frame
            out, block = np.zeros(n, np.int16), np.zeros(frame, np.int16)
            busy = 0.0
            for i in range(0, n, frame):
                args = (ctypes.c_void_p(mic[i:].ctypes.data), ctypes.c_void_p(ref[i:].ctypes.data),
                        ctypes.c_void_p(block.ctypes.data))
                t0 = time.perf_counter()
                lib.speex_echo_cancellation(state, *args)
                busy += time.perf_counter() - t0
                out[i:i + frame] = block
            lib.speex_echo_state_destroy(state)
            rows.append((frame, ms, erle(mic[:n].astype(np.float64), out.astype(np.float64), rate),
                         100 * busy / (n / rate)))
    return rows


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--plugin", default=os.path.join(root, ".build/release/libhear.so"))
    parser.add_argument("--host", default=os.path.join(root, ".build/release/hear-host"))
    parser.add_argument("--output", help="write the report here (markdown) as well as to stdout")
    args = parser.parse_args()
    if not FAR or not NEAR:
        raise SystemExit(f"no speech in {DATA}: apt-get install pocketsphinx-testdata")
    host = Host(args.plugin, args.host)
    lines = ["| rate | ERLE from 2 s (dB) | without hear's canceller | with aec.suppress | near end alone, PESQ-WB "
             "| without the canceller | double talk: raw microphone | hear without the canceller | hear with it "
             "| with aec.suppress |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for rate in (48000, 16000):
        r = scene(host, rate)
        lines.append(f"| {rate // 1000} kHz | {r['erle']:.1f} | {r['erle_off']:.1f} | {r['erle_suppress']:.1f} "
                     f"| {r['near_on']:.2f} | {r['near_off']:.2f} | {r['talk_raw']:.2f} | {r['talk_off']:.2f} "
                     f"| {r['talk_on']:.2f} | {r['talk_suppress']:.2f} |")
    lines += ["", "speexdsp's canceller alone at 48 kHz (its filter converging on the far end alone; ERLE from 2 s):", "",
              "| frame | filter | ERLE (dB) | share of a core |", "|---|---|---|---|"]
    for frame, ms, value, share in speex_sweep():
        lines.append(f"| {frame} | {ms} ms | {value:.1f} | {share:.2f} % |")
    report = "\n".join(lines) + "\n"
    print(report)
    if args.output:
        with open(args.output, "w") as f:
            f.write("<!-- Written by `make eval-echo` (training/hear_training/echo.py); not edited by hand. -->\n"
                    "Synthetic room: far end through hear's speaker chain, a 20 ms path and a 0.4 s reverberant room "
                    "into the microphone, a near-end talker from 4 s; hear's microphone chain at its defaults.\n\n"
                    + report)


if __name__ == "__main__":
    main()
