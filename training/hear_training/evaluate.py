"""hear's noise suppressor against RNNoise, WebRTC NS, speexdsp and DeepFilterNet3 (`make eval`).

Builds the speech-in-noise sets (corpus.py): recorded human speech of held-out speakers (x 8 noises x
SNR -5/5/20 dB) in four groups, the deciding set first (dry wideband talkers; its mean, per-noise
and per-talker tables are the ones the targets are measured on), then the home recordings (the
deciding set until issue #34), the narrowband and the acted talkers, each reported apart and in no
deciding figure; and TTS voices (secondary). Each recorded group is mixed with each noise family
asked for (`--noises`: a, corpus.py; b, noises_b.py, written apart), a set of its own in the report.
Runs every method on the same clips (each clip from a fresh state, at the method's own rate),
compensates each method's delay (measured by cross-correlation on each set's clean speech), and
prints the tables kept in EVALUATION.md, one block per set.

    python -m hear_training.evaluate [--set deciding|home|recorded|tts|all] [--noises a,b] [--only hear,RNNoise]
                                     [--controls ns.reduction=30]

Metrics, on the utterance after a 1 s noise lead-in (every method gets the same lead-in):
  PESQ-WB and STOI at 16 kHz against the clean utterance (mean, by noise, by SNR, by talker; and the
    STOI change against the unprocessed input); SI-SDR improvement over the noisy input;
  residual noise: output/input power of noise-only clips after their first 2 s (dB); and of the
    same clips after 1 s of digital silence (what PipeWire hands a starting source), over the
    second second of noise (dB);
  clean distortion: SI-SDR and PESQ-WB of the output of clean speech against that speech (method
    rate; per talker for the recorded sets);
  the reference checks of a recorded set: RNNoise keeps every talker at or above RNNOISE_CLEAN_FLOOR
    SI-SDR (else the set measures RNNoise's failure), and a set's references are dry only where
    RNNoise's clean-input PESQ-WB is at least RNNOISE_CLEAN_PESQ for every talker and its gain over
    the unprocessed input at least RNNOISE_GAIN (reference_check; sources.py probes every talker);
  delay: the measured lag (ms); CPU: time inside the suppressor per second of audio (% of a core);
  for hear its whole chain at defaults and for RNNoise, both timed in alternating rounds.
"""

import argparse
import os
import shlex
import subprocess
import sys
import time

import numpy as np
from pesq import pesq
from pystoi import stoi
from scipy import signal

from . import corpus
from . import methods

METRIC_RATE = 16000


def resample(x, src, dst):
    return x if src == dst else signal.resample_poly(x, dst, src)


def si_sdr(estimate, reference):
    reference = reference - np.mean(reference)
    estimate = estimate - np.mean(estimate)
    scale = np.dot(estimate, reference) / max(np.dot(reference, reference), 1e-20)
    target = scale * reference
    error = estimate - target
    return 10 * np.log10(max(np.dot(target, target), 1e-20) / max(np.dot(error, error), 1e-20))


def through(method, x, clean):
    """`x` through `method`; the oracle also gets the clean speech beside the mixture."""
    return method.process(x, clean=clean) if getattr(method, "needs_clean", False) else method.process(x)


def measure_delay(method, clips):
    """Lag (samples at the method's rate) that best aligns output with input on clean speech."""
    lags = []
    for clip in clips:
        x = resample(clip["clean"], corpus.RATE, method.rate)
        padded = np.concatenate([x, np.zeros(method.rate // 5)])
        y = through(method, padded, padded)
        maximum = method.rate // 10
        n = len(x)
        corr = signal.fftconvolve(y[: n + maximum], x[::-1], mode="full")[n - 1:n - 1 + maximum]
        lags.append(int(np.argmax(corr)))
    return int(np.median(lags))


def align(y, lag, n):
    out = y[lag:lag + n]
    return np.concatenate([out, np.zeros(n - len(out))])


def run(method, clips, clean_only):
    """One set's noisy and clean-only clips through one method."""
    lag = measure_delay(method, clean_only)
    pad = np.zeros(method.rate // 5)
    rows = []
    for clip in clips:
        x = resample(clip["noisy"], corpus.RATE, method.rate)
        clean = resample(clip["clean"], corpus.RATE, method.rate)
        y = align(through(method, np.concatenate([x, pad]), np.concatenate([clean, pad])), lag, len(x))
        start = clip["start"] * method.rate // corpus.RATE
        reference = resample(clip["clean"], corpus.RATE, METRIC_RATE)[clip["start"] // 3:]
        output = resample(y[start:], method.rate, METRIC_RATE)[: len(reference)]
        noisy = resample(clip["noisy"], corpus.RATE, METRIC_RATE)[clip["start"] // 3:]
        try:
            quality = pesq(METRIC_RATE, reference, output, "wb")
        except Exception:  # PESQ refuses outputs with no detectable speech
            quality = 1.0
        rows.append(dict(noise=clip["noise"], snr=clip["snr"], talker=clip["talker"], pesq=quality,
                         stoi=stoi(reference, output, METRIC_RATE, extended=False),
                         sisdr=si_sdr(output, reference) - si_sdr(noisy, reference)))
    distortion, clean_pesq, talkers = [], [], []
    for clip in clean_only:
        x = resample(clip["clean"], corpus.RATE, method.rate)
        padded = np.concatenate([x, pad])
        y = align(through(method, padded, padded), lag, len(x))
        distortion.append(si_sdr(y, x))
        clean_pesq.append(pesq(METRIC_RATE, resample(x, method.rate, METRIC_RATE), resample(y, method.rate, METRIC_RATE), "wb"))
        talkers.append(clip["talker"])
    return dict(rows=rows, distortion=distortion, clean_pesq=clean_pesq, talkers=talkers, lag=lag,
                delay_ms=1000 * lag / method.rate)


def run_noise(method, noise_only, lag):
    """Noise alone (no speech; the same clips for every set)."""
    pad = np.zeros(method.rate // 5)
    residual = {}
    for clip in noise_only:
        x = resample(clip["noisy"], corpus.RATE, method.rate)
        y = align(method.process(np.concatenate([x, pad])), lag, len(x))
        tail = 2 * method.rate
        residual[clip["noise"]] = 10 * np.log10(np.mean(y[tail:] ** 2) / np.mean(x[tail:] ** 2))
    after_silence = {}
    for clip in noise_only:
        x = np.concatenate([np.zeros(method.rate), resample(clip["noisy"], corpus.RATE, method.rate)])
        y = align(method.process(np.concatenate([x, pad])), lag, len(x))
        second = slice(2 * method.rate, 3 * method.rate)
        after_silence[clip["noise"]] = 10 * np.log10(np.mean(y[second] ** 2) / np.mean(x[second] ** 2))
    return residual, after_silence


def unprocessed(clips):
    rows = []
    for clip in clips:
        reference = resample(clip["clean"], corpus.RATE, METRIC_RATE)[clip["start"] // 3:]
        noisy = resample(clip["noisy"], corpus.RATE, METRIC_RATE)[clip["start"] // 3:]
        rows.append(dict(noise=clip["noise"], snr=clip["snr"], talker=clip["talker"],
                         pesq=pesq(METRIC_RATE, reference, noisy, "wb"),
                         stoi=stoi(reference, noisy, METRIC_RATE, extended=False), sisdr=0.0))
    return dict(rows=rows, residual={}, after_silence={}, distortion=[np.inf], clean_pesq=[], talkers=[],
                delay_ms=0.0, cpu=0.0)


def mean(rows, key, **where):
    values = [r[key] for r in rows if all(r[k] == v for k, v in where.items())]
    return float(np.mean(values))


def tables(results, snrs, noise_alone=True):
    """One set's tables. `noise_alone`: also the noise-only tables (the same for every set)."""
    lines = ["| method | PESQ-WB | STOI | ΔSI-SDR (dB) | residual noise (dB) | clean SI-SDR (dB, min) | delay (ms) | CPU (% core) |",
             "|---|---|---|---|---|---|---|---|"]
    for name, r in results.items():
        residual = f"{np.mean(list(r['residual'].values())):.1f}" if r["residual"] else "0"
        distortion = "∞" if not np.isfinite(r["distortion"][0]) else f"{np.mean(r['distortion']):.1f} ({np.min(r['distortion']):.1f})"
        cpu = f"{r['cpu']:.3f}" if r["cpu"] else "-"
        lines.append(f"| {name} | {mean(r['rows'], 'pesq'):.3f} | {mean(r['rows'], 'stoi'):.3f} | "
                     f"{mean(r['rows'], 'sisdr'):.2f} | {residual} | {distortion} | {r['delay_ms']:.2f} | {cpu} |")

    def grid(title, columns, cell):
        """A table of one row per method and one column per key, `cell(rows, key)` in each."""
        out = ["", title, "", "| method | " + " | ".join(str(c) for c in columns) + " |", "|---" * (len(columns) + 1) + "|"]
        return out + [f"| {name} | " + " | ".join(cell(r["rows"], c) for c in columns) + " |" for name, r in results.items()]

    lines += grid("PESQ-WB / STOI by noise:", corpus.NOISES,
                  lambda rows, n: f"{mean(rows, 'pesq', noise=n):.2f} / {mean(rows, 'stoi', noise=n):.3f}")
    # Issue #13 compares methods per noise within 0.05 and on keyboard: three decimals.
    lines += grid("PESQ-WB by noise:", corpus.NOISES, lambda rows, n: f"{mean(rows, 'pesq', noise=n):.3f}")
    lines += grid("PESQ-WB by input SNR (dB):", snrs, lambda rows, s: f"{mean(rows, 'pesq', snr=s):.2f}")
    talkers = list(dict.fromkeys(r["talker"] for r in results["unprocessed"]["rows"]))
    lines += grid("PESQ-WB / STOI by talker (all noises and SNRs):", talkers,
                  lambda rows, t: f"{mean(rows, 'pesq', talker=t):.2f} / {mean(rows, 'stoi', talker=t):.3f}")
    # Every deciding talker must reach RNNoise: two decimals can tie, three decide.
    lines += grid("PESQ-WB by talker:", talkers, lambda rows, t: f"{mean(rows, 'pesq', talker=t):.3f}")
    if noise_alone:
        lines += noise_tables(results)
    # The STOI target is relative to the input (at or above it on average, at most 0.02 below it per
    # noise), closer than the tables' three decimals show.
    base = results["unprocessed"]["rows"]
    lines += ["", "STOI change against the unprocessed input (mean; worst noise):", ""]
    for name, r in results.items():
        if name == "unprocessed":
            continue
        changes = {n: mean(r["rows"], "stoi", noise=n) - mean(base, "stoi", noise=n) for n in corpus.NOISES}
        worst = min(changes, key=changes.get)
        lines.append(f"- {name}: {mean(r['rows'], 'stoi') - mean(base, 'stoi'):+.4f}; {worst} {changes[worst]:+.4f}")
    lines += ["", "STOI change against the unprocessed input, by noise:", "",
              "| method | " + " | ".join(corpus.NOISES) + " |", "|---" * (len(corpus.NOISES) + 1) + "|"]
    for name, r in results.items():
        if name != "unprocessed":
            lines.append(f"| {name} | " + " | ".join(
                f"{mean(r['rows'], 'stoi', noise=n) - mean(base, 'stoi', noise=n):+.4f}" for n in corpus.NOISES) + " |")
    return "\n".join(lines)


def noise_tables(results):
    lines = ["", "Residual noise on noise-only input after 2 s (dB):", "",
             "| method | " + " | ".join(corpus.NOISES) + " |", "|---" * (len(corpus.NOISES) + 1) + "|"]
    for name, r in results.items():
        if r["residual"]:
            lines.append(f"| {name} | " + " | ".join(f"{r['residual'][n]:.1f}" for n in corpus.NOISES) + " |")
    lines += ["", "The same noise after 1 s of digital silence, over its second second (dB):", "",
              "| method | " + " | ".join(corpus.NOISES) + " |", "|---" * (len(corpus.NOISES) + 1) + "|"]
    for name, r in results.items():
        if r["after_silence"]:
            lines.append(f"| {name} | " + " | ".join(f"{r['after_silence'][n]:.1f}" for n in corpus.NOISES) + " |")
    return lines


def talker_table(results):
    """Clean speech in, SI-SDR of the output against it, per recorded talker (issue #13: >= 25 dB)."""
    names = [n for n in results if n != "unprocessed"]
    if not names:
        return ""
    talkers = results[names[0]]["talkers"]
    lines = ["", "Clean speech in: SI-SDR of the output against the input, per talker (dB):", "",
             "| method | " + " | ".join(talkers) + " |", "|---" * (len(talkers) + 1) + "|"]
    for name in names:
        lines.append(f"| {name} | " + " | ".join(f"{d:.1f}" for d in results[name]["distortion"]) + " |")
    lines += ["", "Clean speech in: PESQ-WB of the output against the input, per talker:", "",
              "| method | " + " | ".join(talkers) + " |", "|---" * (len(talkers) + 1) + "|"]
    for name in names:
        lines.append(f"| {name} | " + " | ".join(f"{d:.2f}" for d in results[name]["clean_pesq"]) + " |")
    return "\n".join(lines)


# RNNoise keeps clean speech of the deciding talkers at 11-18 dB SI-SDR; below this floor a talker is
# one it breaks on (the hedgewars voices: -1.3 and 1.6 dB), and a comparison with it there says little.
RNNOISE_CLEAN_FLOOR = 10.0


def rnnoise_check(results):
    """The deciding set's guard: RNNoise's clean SI-SDR per talker, each >= RNNOISE_CLEAN_FLOOR."""
    if "RNNoise" not in results:
        return ""
    r = results["RNNoise"]
    failed = [(t, d) for t, d in zip(r["talkers"], r["distortion"]) if not d >= RNNOISE_CLEAN_FLOOR]
    cells = ", ".join(f"{t} {d:.1f}" for t, d in zip(r["talkers"], r["distortion"]))
    if failed:
        line = (f"**CHECK FAILED: RNNoise's clean SI-SDR is below {RNNOISE_CLEAN_FLOOR:.0f} dB for "
                + ", ".join(f"{t} ({d:.1f} dB)" for t, d in failed) + f": this talker does not belong in the deciding set.** ({cells})")
        print(line, file=sys.stderr)
    else:
        line = f"Check: RNNoise's clean SI-SDR is at least {RNNOISE_CLEAN_FLOOR:.0f} dB for every deciding talker ({cells} dB)."
    return line


# A set decides only where its references are dry, as a call's microphone is: RNNoise passes dry speech
# nearly untouched (PESQ-WB 4.1 on a dry TTS voice, sources.py) and gains clearly over noisy input.
# Where a reference keeps its recording's floor or room, RNNoise removes them and PESQ marks it down
# (2.95 on the clean speech of the home recordings that decided until now, below the input at 20 dB
# SNR), and a suppressor that keeps them looks better than it is.
RNNOISE_CLEAN_PESQ = 3.5
RNNOISE_GAIN = 0.3


def reference_check(results):
    """The two guards of a dry reference, one line: RNNoise's clean-input PESQ-WB per talker >=
    RNNOISE_CLEAN_PESQ, and its mean PESQ-WB gain over the unprocessed input >= RNNOISE_GAIN."""
    if "RNNoise" not in results:
        return ""
    r = results["RNNoise"]
    cells = ", ".join(f"{t} {p:.2f}" for t, p in zip(r["talkers"], r["clean_pesq"]))
    low = [t for t, p in zip(r["talkers"], r["clean_pesq"]) if not p >= RNNOISE_CLEAN_PESQ]
    gain = mean(r["rows"], "pesq") - mean(results["unprocessed"]["rows"], "pesq")
    verdict = "held" if not low and gain >= RNNOISE_GAIN else "FAILED"
    line = (f"Reference check {verdict}: RNNoise's clean-input PESQ-WB per talker (at least {RNNOISE_CLEAN_PESQ}): {cells}"
            + (f" (below: {', '.join(low)})" if low else "")
            + f"; its gain over the unprocessed input {gain:+.3f} (at least +{RNNOISE_GAIN}).")
    if verdict == "FAILED":
        line = f"**{line} This set's references are not dry: its figures do not decide.**"
        print(line, file=sys.stderr)
    return line


CPU_CASES = {
    "learned": ["ns.mode=1"],
    "classical": ["ns.mode=0"],
    "learned, 32-sample blocks": ["-b", "32", "ns.mode=1"],
    "learned, 1024-sample blocks": ["-b", "1024", "ns.mode=1"],
    # The microphone chain with hear's speaker chain beside it (untimed), its echo canceller cancelling.
    "learned, echo canceller cancelling": ["-e", "hear_stereo", "ns.mode=1", "chain=1"],
}


def cpu_comparison(args, clips, rounds=5, seconds=10):
    """The full chain at its defaults in each noise-suppression mode (`hear-host bench`, built-in signal,
    256-sample blocks unless named) and RNNoise (ctypes) timed in alternation, so that whatever else
    the machine does weighs on all alike; medians in ns per sample."""
    audio = np.concatenate([c["noisy"] for c in clips])[: seconds * corpus.RATE]
    rnnoise = methods.RNNoise()
    chain, reference = {case: [] for case in CPU_CASES}, []
    for _ in range(rounds):
        for case, extra in CPU_CASES.items():
            options = [a for a in extra if "=" not in a]
            controls = [a for a in extra if "=" in a]
            out = subprocess.run([args.host, "bench", "-s", str(seconds), "-r", "48000"] + options
                                 + [args.plugin, "hear_mono"] + controls, check=True, capture_output=True, text=True).stdout
            chain[case].append(methods.run_time_ns(out))
        rnnoise.seconds, rnnoise.samples = 0.0, 0
        rnnoise.process(audio)
        reference.append(rnnoise.seconds / rnnoise.samples * 1e9)
    return {case: float(np.median(v)) for case, v in chain.items()}, float(np.median(reference))


RECORDED_TITLES = {
    "deciding": "Deciding set: dry recorded wideband speech (held-out talkers, gated to digital silence between words)",
    "home": "Home recordings (the deciding set until issue #34: their references keep the recording's floor and room; reported apart)",
    "narrowband": "Narrowband talker (8 kHz GSM prompts, held out; reported apart, in no deciding figure)",
    "acted": "Acted game voices (hedgewars, held out; reported apart, in no deciding figure)",
}


def main():
    parser = argparse.ArgumentParser()
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--plugin", default=os.path.join(root, ".build/release/libhear.so"))
    parser.add_argument("--host", default=os.path.join(root, ".build/release/hear-host"),
                        help="the LADSPA host that runs and times libhear.so (hear-host, built by make)")
    parser.add_argument("--cache", default=os.path.join(root, ".build/eval-cache"))
    parser.add_argument("--utterances", type=int, default=2, help="TTS clips per noise and SNR")
    parser.add_argument("--set", default="all", choices=["deciding", "home", "recorded", "tts", "all"],
                        help="the deciding set alone, every recorded set (deciding, narrowband, acted), "
                             "the TTS set, or all of them (default)")
    parser.add_argument("--noises", default="a,b",
                        help="noise families for the recorded sets, comma-separated: a (corpus.py), b (noises_b.py, "
                             "written apart); each family is a set of its own in the report (default: a,b)")
    parser.add_argument("--only", default="", help="comma-separated method names to run (default: all)")
    parser.add_argument("--oracle", action="store_true",
                        help="also the oracle masks through hear's own suppressor (hear-features oracle): "
                             "oracle-bands (the model's training target, in the model's place), oracle-model "
                             "(the per-bin Wiener gain in the model's place), oracle-mask (the per-bin Wiener "
                             "gain as the whole mask), and the analysis-window variants of oracle-mask")
    parser.add_argument("--features", default=os.path.join(root, ".build/release/hear-features"))
    parser.add_argument("--controls", default="", help="extra hear controls, e.g. ns.reduction=30,ns.sensitivity=60")
    parser.add_argument("--output", default=os.path.join(root, ".build/eval-results.md"))
    args = parser.parse_args()

    started = time.time()
    sets = {}
    tts_clips, tts_clean, noise_only = corpus.build(args.cache, args.utterances)
    if args.set != "tts":
        for family in args.noises.split(","):
            recorded = corpus.build_recorded(args.cache, [args.set] if args.set in ("deciding", "home") else None, family)
            for group, (clips, clean_only) in recorded.items():
                key = group if family == "a" else f"{group}, noises {family}"
                title = RECORDED_TITLES[group] + ("" if family == "a" else f"; noise family {family} (noises_b.py)")
                sets[key] = dict(clips=clips, clean_only=clean_only, snrs=corpus.RECORDED_SNRS, title=title, group=group)
    if args.set in ("tts", "all"):
        sets["tts"] = dict(clips=tts_clips, clean_only=tts_clean, snrs=corpus.SNRS,
                           title="TTS (flite and espeak-ng voices)")
    for key, s in sets.items():
        print(f"{key}: {len(s['clips'])} noisy clips, {len(s['clean_only'])} clean "
              f"({sum(len(c['noisy']) for c in s['clips']) / corpus.RATE:.0f} s of noisy speech)", file=sys.stderr)
    print(f"{len(noise_only)} noise-only clips", file=sys.stderr)

    # hear with only its suppressor shaping the sound (EQ and compressor off; the limiter stays, idle below its ceiling).
    controls = {"eq.enable": 0, "comp.enable": 0}
    controls.update(dict(item.split("=") for item in args.controls.split(",") if item))
    # hear in each noise-suppression mode: "hear" is the learned model, "hear-classical" the estimator.
    hear = methods.Hear(args.plugin, args.host, {**controls, "ns.mode": 1})
    classical = methods.Hear(args.plugin, args.host, {**controls, "ns.mode": 0}, name="hear-classical")
    candidates = [hear, classical, methods.RNNoise(), methods.WebRTC(), methods.Speex(), methods.DeepFilterNet()]
    if args.oracle:
        oracle_controls = {**controls, "ns.mode": 1}
        candidates += [methods.Oracle(args.features, "bands", controls=oracle_controls),
                       methods.Oracle(args.features, "model", controls=oracle_controls),
                       methods.Oracle(args.features, "mask", controls=oracle_controls)]
        # What frequency resolution is worth at the same hop and latency: a frame of 16 hops (2048
        # at 48 kHz) instead of 8, and a Hann rise instead of a sine rise (FilterBank.swift).
        candidates += [methods.Oracle(args.features, "mask", controls=oracle_controls, frame_hops=16,
                                      name="oracle-mask-16hops"),
                       methods.Oracle(args.features, "mask", controls=oracle_controls, rise=2.0,
                                      name="oracle-mask-hann-rise"),
                       methods.Oracle(args.features, "mask", controls=oracle_controls, floor_db=-30,
                                      name="oracle-mask-30dB")]
    if args.only:
        keep = set(args.only.split(","))
        candidates = [m for m in candidates if m.name in keep]
    results = {key: {"unprocessed": unprocessed(s["clips"])} for key, s in sets.items()}
    for method in candidates:
        t = time.time()
        for key, s in sets.items():
            results[key][method.name] = run(method, s["clips"], s["clean_only"])
        # Noise alone, aligned with the lag measured on the TTS set when there is one (as before).
        residual, after_silence = run_noise(method, noise_only, results[key][method.name]["lag"])
        samples, seconds = method.samples, method.seconds
        for key in sets:
            results[key][method.name].update(residual=residual, after_silence=after_silence,
                                             cpu=100 * seconds / (samples / method.rate))
        print(f"{method.name}: {time.time() - t:.0f} s", file=sys.stderr)

    # Timing needs hear's plugin and its host: only when hear is among the methods run.
    timed = hear in candidates
    chain, rnnoise_ns = cpu_comparison(args, tts_clips) if timed else ({}, 1.0)
    # hear's rows show its whole chain at defaults in that mode, timed against RNNoise in
    # alternation (below): one host process per short clip would mostly time a cold start.
    for key in sets if timed else ():
        if "hear" in results[key]:
            results[key]["hear"]["cpu"] = chain["learned"] * 48000 / 1e7
        if "hear-classical" in results[key]:
            results[key]["hear-classical"]["cpu"] = chain["classical"] * 48000 / 1e7
        if "RNNoise" in results[key]:
            results[key]["RNNoise"]["cpu"] = rnnoise_ns * 48000 / 1e7
    blocks = []
    for i, (key, s) in enumerate(sets.items()):
        block = f"## {s['title']}: {len(s['clips'])} clips\n\n"
        group = s.get("group")
        for check in (rnnoise_check(results[key]) if group in ("deciding", "home") else "",
                      reference_check(results[key]) if group else ""):
            if check:
                block += check + "\n\n"
        # The noise-only tables do not depend on speech: printed once, with the last set.
        block += tables(results[key], s["snrs"], noise_alone=(i == len(sets) - 1))
        if s.get("group"):
            block += "\n" + talker_table(results[key])
        blocks.append(block)
    report = "\n\n".join(blocks)
    if timed:
        report += f"\n\nhear reports latency {hear.reported_latency()} samples at 48 kHz (echo canceller, noise suppressor, limiter look-ahead)."
        report += ("\nCPU, 48 kHz mono, interleaved rounds (median of 5): hear's full chain at its defaults (denoise, EQ, "
                   "compressor, gain, limiter; hear-host bench, 256-sample blocks unless named) against RNNoise (librnnoise.so "
                   f"from the pyrnnoise wheel, {rnnoise_ns:.1f} ns/sample):")
        for case, ns in chain.items():
            report += f"\n- {case}: {ns:.1f} ns/sample, ratio to RNNoise {ns / rnnoise_ns:.3f}"
        report += (f"\n- learned, 32- against 1024-sample blocks: "
                   f"{chain['learned, 32-sample blocks'] / chain['learned, 1024-sample blocks']:.2f}x")
    counts = " + ".join(f"{len(s['clips'])} {key}" for key, s in sets.items())
    report += f"\n\n{counts} clips; evaluation took {time.time() - started:.0f} s."
    report = provenance(root) + "\n\n" + report
    print(report)
    with open(args.output, "w") as f:
        f.write(report + "\n")


def provenance(root):
    """The report's first lines: what produced it, on which build (a report is the one place the
    docs' figures come from: `make eval-results` writes docs/results/, IntegrationTests'
    DocumentFiguresTests checks the docs against it)."""
    command = "python -m hear_training.evaluate " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    git = lambda *a: subprocess.run(["git", "-C", root, *a], capture_output=True, text=True).stdout.strip()
    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = " with uncommitted changes" if git("status", "--porcelain", "--untracked-files=no") else ""
    return (f"<!-- Written by `{command.strip()}`; not edited by hand. -->\n"
            f"Measured {time.strftime('%Y-%m-%d', time.gmtime())} at commit {commit}{dirty}, "
            f"{os.cpu_count()} cores: `{command.strip()}`.")


if __name__ == "__main__":
    main()
