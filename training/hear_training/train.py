"""Trains the learned noise suppressor's gain model and exports its weights (`make train`).

Input: the rows hear-features wrote (Sources/hear-features: the suppressor's own features, then the
band powers of the noisy stream, the clean speech and the noise, one row per model step), from
every set of a split: DATA/train and DATA/valid at 48 kHz, DATA/train-16k, DATA/train-8k (and the
same for valid) at the rates their manifests name. Nothing here assumes a step rate: a clip is as
many rows as its .feat holds.
Targets, per band: the ideal ratio mask sqrt(S / (S + N)) from the clean and noise band powers,
ignored (-1) where the noisy band is empty (a band above a band-limited stream's top) and where the
band's centre lies above 0.9 x the clip's `speech_top_hz` (manifest.json, data.py: the highest
frequency its clean speech carries) while the stream itself reaches higher: an 8 kHz voice in a
wideband mixture does not teach the model that speech stops at 4 kHz. Per step: speech activity
(the clean speech's mean band level above -75 dB).

Model (mirrored by Sources/HearDSP/NoiseSuppression/GainModel.swift, which reads the sizes from the
blob's header): dense 163 -> DENSE (tanh), GRU HIDDEN, GRU HIDDEN, dense [h1; h2] -> 33 (sigmoid:
32 band gains, speech probability); DENSE = HIDDEN = 64 by default (--dense, --hidden; multiples
of 8), 64,673 weights.
Loss: squared error of the gains' square roots (RNNoise's measure), counted double where the model
attenuates more than the target (a lost syllable costs more than a little noise; --under-weight),
plus 0.5 x the speech activity's cross-entropy. Counted once (symmetric, as RNNoise does), the
retrained model scored PESQ-WB 1.837 on the deciding set (family a) against 1.883. `--quartic W`
adds W x the error's fourth power, as RNNoise's training does with 10: with 10 the deciding set
stayed level and clean speech lost 5 dB of SI-SDR (training/README.md), so the recipe leaves it out.
`--transient-weight W` counts the error W times where a broadband rise of the noise rides on
speech (`transient_steps`); with 8 the deciding set stayed level and family b's keys lost 0.07
(training/README.md), so the recipe leaves it at 1.

Training: stateful truncated backpropagation through time. A batch is --batch clips (32), each
started at a random offset of 0...--window rows, walked through in consecutive windows of --window
steps (400); each GRU's state is carried (detached) from one window to the next, and every window
is one optimizer update. An epoch is every training clip once. Adam, learning rate 1e-3 on a cosine
down to 5 % of it over --updates (15,000) updates, gradient norm clipped at 1.0, fixed seeds, one
CPU thread (--threads). About every --valid-every (1,000) updates, at the end of a batch, the
validation loss (every validation clip, whole, from a zero state) and a checkpoint (model,
optimizer, scheduler, position, history): a rerun resumes from it, `--minutes N` stops cleanly
after N minutes (checkpointed). `--init CHECKPOINT` starts from a saved model's weights instead of
the seeded ones: a fine-tuning run with its own schedule (2,500 updates take about 6 minutes). Every checkpoint's weights stay (WORK/checkpoints/UPDATE.pt), and
`--export-candidates` writes them and the weight means of the last 3 and 5 as blobs that pick.py
scores by PESQ-WB on the validation clips (`make train` exports pick.py's choice with
`--export-candidate NAME`); run alone, train.py exports the checkpoint with the lowest validation loss:
  Sources/CHearModel/hear-model.bin (+ .sha256)   float16 weights, header with shapes and FNV-1a (--blob)
  Tests/HearDSPTests/Fixtures/reference-vectors.bin            features in, outputs out, from the exported
                                                  (float16-rounded) weights in float32 numpy (--reference)
  .build/train/loss.png, history.json             the loss curves
"""

import argparse
import glob
import hashlib
import json
import math
import os
import shutil
import struct
import sys
import time

import numpy as np

BANDS = 32
FEATURES = 5 * BANDS + 3
ROW = FEATURES + 3 * BANDS
# Changes with what a checkpoint is trained for (row layout, targets, loss, training scheme): a run
# resumes only from a checkpoint of the same version, sizes and data (see `fingerprint`).
LOSS_VERSION = 3
DENSE, HIDDEN, OUTPUTS, STRIDE = 64, 64, BANDS + 1, 1
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BLOB = os.path.join(ROOT, "Sources/CHearModel/hear-model.bin")
REFERENCE = os.path.join(ROOT, "Tests/HearDSPTests/Fixtures/reference-vectors.bin")
# The band's centre must lie above this share of the clip's speech top to be ignored.
TOP_MARGIN = 0.9


def band_centres():
    """Centre frequency (Hz) of every band: SpeechBandLayout.centre in
    Sources/HearDSP/NoiseSuppression/SpeechBands.swift (0, 100, ..., 400 Hz, then evenly spaced on
    the ERB-rate scale, 21.4 log10(1 + 0.00437 f), from 500 Hz to 20 kHz)."""
    erb = lambda f: 21.4 * math.log10(1 + 0.00437 * f)
    frequency = lambda e: (10 ** (e / 21.4) - 1) / 0.00437
    linear = 5
    low, high = erb(500.0), erb(20000.0)
    step = (high - low) / (BANDS - 1 - linear)
    return np.array([b * 100.0 if b < linear else frequency(low + (b - linear) * step) for b in range(BANDS)])


CENTRES = band_centres()


def sets(data, split):
    """The directories of one split: SPLIT (48 kHz) and SPLIT-16k, SPLIT-8k (Makefile's TRAIN_SETS)."""
    return sorted(d for d in glob.glob(os.path.join(data, split + "*")) if os.path.isdir(d))


def limit_blas_threads(count):
    """Caps the threads of the BLAS numpy and torch use (OpenBLAS on Debian: it starts a thread per
    core when numpy is imported, before --threads is read). With more than one, the GRU's small
    per-step products spend most of their time waking threads (measured with the other core busy:
    115 us a product against 29 us with one thread, 2.7 against 5 updates a second)."""
    import ctypes
    try:
        with open("/proc/self/maps") as f:
            paths = sorted({line.split()[-1] for line in f
                            if "blas" in line.lower() and line.split()[-1].startswith("/")})
    except OSError:
        paths = []
    for path in paths:
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        setter = getattr(library, "openblas_set_num_threads", None)
        if setter is not None:
            setter(count)


def manifest(directory):
    """The set's manifest.json (data.py), or None."""
    path = os.path.join(directory, "manifest.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def ignored_bands(entry, rate):
    """The bands whose gain target a clip's speech cannot set: those centred above TOP_MARGIN x its
    speech top, where the stream reaches further (a band-limited stream's empty top bands are
    ignored anyway, by their empty noisy band)."""
    top = entry.get("speech_top_hz") if entry else None
    if top is None:
        return np.zeros(BANDS, bool)
    augment = entry.get("augment", {})
    stream = min(rate / 2, augment.get("band_limit_hz") or rate / 2)
    if top >= TOP_MARGIN * stream:
        return np.zeros(BANDS, bool)
    return CENTRES > TOP_MARGIN * top


# Where a transient rides on a voice (--transient-weight): a band whose noise power rises
# TRANSIENT_RISE times above its mean over the last TRANSIENT_STEPS steps (0.3 s), in a step where
# at least TRANSIENT_BANDS bands rise at once (a click is broadband; a random peak of steady noise
# is not), while the clean speech in that band is within 10 dB of the noise.
TRANSIENT_RISE, TRANSIENT_BANDS, TRANSIENT_STEPS, TRANSIENT_RIDE = 4.0, 10, 112, 0.1


def transient_steps(clean, noise):
    """(T, 32) bool: the step-bands where a broadband rise of the noise rides on speech."""
    from scipy.signal import lfilter
    a = 1 / TRANSIENT_STEPS
    mean = lfilter([a], [1, -(1 - a)], noise, axis=0)
    before = np.concatenate([noise[:1], mean[:-1]])
    rises = (noise > TRANSIENT_RISE * np.maximum(before, 1e-12)) & (noise > 1e-10)
    broad = rises.sum(axis=1, keepdims=True) >= TRANSIENT_BANDS
    return rises & broad & (clean > TRANSIENT_RIDE * noise)


def load(directory, limit=None, transients=False, half=False, stride=1):
    """Per clip: features (T, 163) float32 (float16 with `half`: half the memory, for sets that do
    not fit in it as float32), gain targets (T, 32) float16 (-1 = ignore), activity (T,) uint8, and
    with `transients` the step-bands where a transient rides on speech (T, 32) bool (else None); and
    how many (clip, band) targets the speech top took out. With `stride` S the model steps at every
    S-th frame (0, S, 2S, ...) and its gains hold for S frames: a step's features are those of its
    frame, its targets those of the S frames its gains apply to (band powers summed over them)."""
    info = manifest(directory)
    rate = info.get("rate", 48000) if info else 48000
    entries = {e["clip"]: e for e in info["clips"]} if info else {}
    clips, masked = [], 0
    for path in sorted(glob.glob(os.path.join(directory, "*.feat")))[:limit]:
        rows = np.fromfile(path, dtype="<f4")
        rows = rows.reshape(-1, ROW)
        steps = len(rows) // stride
        x = rows[:steps * stride:stride, :FEATURES]
        held = rows[:steps * stride, FEATURES:].reshape(steps, stride, 3 * BANDS).sum(axis=1)
        noisy = held[:, :BANDS]
        clean = held[:, BANDS:2 * BANDS]
        noise = held[:, 2 * BANDS:]
        gain = np.sqrt(clean / np.maximum(clean + noise, 1e-20))
        gain = np.where(noisy > 1e-10, np.clip(gain, 0, 1), -1.0)
        ignore = ignored_bands(entries.get(os.path.basename(path)[:-5]), rate)
        gain[:, ignore] = -1.0
        masked += int(ignore.sum())
        activity = (np.mean(clean, axis=1) > 10 ** -7.5).astype(np.uint8)
        riding = transient_steps(clean, noise) if transients else None
        clips.append((np.ascontiguousarray(x, dtype=np.float16 if half else np.float32), gain.astype(np.float16),
                      activity, riding))
    return clips, masked


def load_split(data, split, transients=False, half=False, stride=1):
    clips, masked = [], 0
    for directory in sets(data, split):
        c, m = load(directory, transients=transients, half=half, stride=stride)
        clips += c
        masked += m
    return clips, masked


def gru_function(torch):
    """One GRU layer over a whole window as a torch.autograd.Function whose forward and backward
    loops run in numpy (PyTorch's nn.GRU semantics and weight layout: gates r, z, n;
    n = tanh(W_in x + b_in + r (W_hn h + b_hn)), h' = (1 - z) n + z h). Per step only the recurrent
    product and a few element-wise operations run; the input products and every weight gradient are
    one large matrix product over the window. With this model's small matrices, PyTorch's own GRU
    spends much of its time dispatching small operations and building the autograd graph: a layer's
    forward and backward pass over a window takes 86 ms here against nn.GRU's 111 ms (one thread,
    32 x 400 steps, 64 wide), a fifth less time per update, with the same arithmetic (checked
    against nn.GRU, outputs and gradients, by test_fast_gru)."""
    class GRU(torch.autograd.Function):
        @staticmethod
        def forward(ctx, gi, h0, w_hh, b_hh):
            # gi: (T, B, 3H), the input products plus b_ih, time-major; h0: (B, H).
            gi_, h, w, b = gi.detach().numpy(), h0.detach().numpy(), w_hh.detach().numpy(), b_hh.detach().numpy()
            steps, batch, three = gi_.shape
            size = three // 3
            w_t = np.ascontiguousarray(w.T)
            out = np.empty((steps, batch, size), gi_.dtype)
            rz = np.empty((steps, batch, 2 * size), gi_.dtype)
            n = np.empty((steps, batch, size), gi_.dtype)
            gh = np.empty((steps, batch, three), gi_.dtype)
            tmp = np.empty((batch, size), gi_.dtype)
            # The sigmoid and tanh through torch (vectorized; numpy's are 2-4 times slower here),
            # in place on views of the numpy buffers.
            rz_steps, n_steps = torch.from_numpy(rz).unbind(0), torch.from_numpy(n).unbind(0)
            for t in range(steps):
                np.dot(h, w_t, out=gh[t])
                gh[t] += b
                np.add(gi_[t, :, :2 * size], gh[t, :, :2 * size], out=rz[t])
                rz_steps[t].sigmoid_()
                np.multiply(rz[t, :, :size], gh[t, :, 2 * size:], out=n[t])
                n[t] += gi_[t, :, 2 * size:]
                n_steps[t].tanh_()
                np.subtract(h, n[t], out=tmp)
                tmp *= rz[t, :, size:]
                np.add(n[t], tmp, out=out[t])
                h = out[t]
            ctx.saved = (h0.detach().numpy(), w, out, rz, n, gh[:, :, 2 * size:])
            ctx.h0_grad = h0.requires_grad
            out_t = torch.from_numpy(out)
            return out_t, out_t[-1].clone()

        @staticmethod
        def backward(ctx, d_out, d_last):
            h0, w, out, rz, n, gh_n = ctx.saved
            steps, batch, size = out.shape
            d_out = d_out.detach().numpy() if d_out is not None else np.zeros_like(out)
            d_out = np.array(d_out, copy=True)
            if d_last is not None:
                d_out[-1] += d_last.detach().numpy()
            r, z = rz[:, :, :size], rz[:, :, size:]
            previous = np.concatenate([h0[None], out[:-1]])
            slope = rz * (1 - rz)
            ab = (1 - z) * (1 - n * n)          # dh -> d(n's pre-activation)
            cs = (previous - n) * slope[:, :, size:]  # dh -> d(z's pre-activation)
            gs = gh_n * slope[:, :, :size]       # d(n's pre-activation) -> d(r's pre-activation)
            dgh = np.empty((steps, batch, 3 * size), out.dtype)
            dn = np.empty((steps, batch, size), out.dtype)
            carry = np.zeros((batch, size), out.dtype)
            dh = np.empty((batch, size), out.dtype)
            tmp = np.empty((batch, size), out.dtype)
            for t in range(steps - 1, -1, -1):
                np.add(d_out[t], carry, out=dh)
                np.multiply(dh, ab[t], out=dn[t])
                np.multiply(dh, cs[t], out=dgh[t, :, size:2 * size])
                np.multiply(dn[t], gs[t], out=dgh[t, :, :size])
                np.multiply(dn[t], r[t], out=dgh[t, :, 2 * size:])
                np.dot(dgh[t], w, out=carry)
                np.multiply(dh, z[t], out=tmp)
                carry += tmp
            dgi = np.concatenate([dgh[:, :, :2 * size], dn], axis=2)
            flat = dgh.reshape(-1, 3 * size)
            dw = flat.T @ previous.reshape(-1, size)
            db = flat.sum(axis=0)
            return (torch.from_numpy(dgi), torch.from_numpy(carry) if ctx.h0_grad else None,
                    torch.from_numpy(dw), torch.from_numpy(db))

    return GRU


def build_model(torch, dense=DENSE, hidden=HIDDEN, stride=STRIDE):
    """The model, and `stride`: the frames each of its steps holds for (the blob's header)."""
    nn = torch.nn
    fast_gru = gru_function(torch)

    class GainModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.dense = nn.Linear(FEATURES, dense)
            self.gru1 = nn.GRU(dense, hidden, batch_first=True)
            self.gru2 = nn.GRU(hidden, hidden, batch_first=True)
            self.out = nn.Linear(2 * hidden, OUTPUTS)

        def forward(self, x, state=None, fast=True):
            """x: (B, T, 163); state: each GRU's (1, B, H) state or None (zeros). The outputs
            (B, T, 33) and the GRUs' last states. fast=False runs PyTorch's own GRU."""
            if not fast:
                h1_0, h2_0 = state if state is not None else (None, None)
                d = torch.tanh(self.dense(x))
                h1, s1 = self.gru1(d, h1_0)
                h2, s2 = self.gru2(h1, h2_0)
                return torch.sigmoid(self.out(torch.cat([h1, h2], dim=-1))), (s1, s2)
            batch = x.shape[0]
            if state is None:
                state = tuple(x.new_zeros(1, batch, hidden) for _ in range(2))
            d = torch.tanh(self.dense(x.transpose(0, 1).contiguous()))  # time-major from here on
            g1, g2 = self.gru1, self.gru2
            h1, s1 = fast_gru.apply(nn.functional.linear(d, g1.weight_ih_l0, g1.bias_ih_l0), state[0][0],
                                    g1.weight_hh_l0, g1.bias_hh_l0)
            h2, s2 = fast_gru.apply(nn.functional.linear(h1, g2.weight_ih_l0, g2.bias_ih_l0), state[1][0],
                                    g2.weight_hh_l0, g2.bias_hh_l0)
            y = torch.sigmoid(self.out(torch.cat([h1, h2], dim=-1)))
            return y.transpose(0, 1), (s1[None], s2[None])

    model = GainModel()
    model.stride = stride
    return model


def test_fast_gru():
    """The numpy GRU against PyTorch's, outputs and every gradient, in float64 (and float32)."""
    import torch
    for dtype, tolerance in ((torch.float64, 1e-12), (torch.float32, 2e-5)):
        torch.manual_seed(3)
        model = build_model(torch, 16, 24).to(dtype)
        x = torch.randn(5, 37, FEATURES, dtype=dtype)
        state = tuple(0.5 * torch.randn(1, 5, 24, dtype=dtype) for _ in range(2))
        target = torch.rand(5, 37, OUTPUTS, dtype=dtype)
        results = []
        for fast in (True, False):
            model.zero_grad()
            y, (s1, s2) = model(x, state, fast=fast)
            ((y - target) ** 2).sum().backward()
            results.append([y, s1, s2] + [p.grad.clone() for p in model.parameters()])
        worst = max(float((a - b).abs().max() / max(float(b.abs().max()), 1e-30)) for a, b in zip(*results))
        assert worst < tolerance, (dtype, worst)
        print(f"fast GRU against nn.GRU, {dtype}: largest relative difference {worst:.1e}")


def fingerprint(data, args):
    """What a checkpoint belongs to: the loss version, the row layout, the model's sizes and stride,
    the window, batch and offsets, and the data sets' manifests."""
    options = f" under {args.under_weight}" if args.under_weight != 2.0 else ""
    options += f" quartic {args.quartic}" if args.quartic else ""
    options += f" transient {args.transient_weight}" if args.transient_weight != 1.0 else ""
    options += " half-features" if args.half_features else ""
    options += f" seed {args.seed}" if args.seed != 1 else ""
    if args.init:
        with open(args.init, "rb") as f:
            options += f" init {hashlib.sha256(f.read()).hexdigest()[:16]} lr {args.lr}"
    h = hashlib.sha256(f"loss {LOSS_VERSION} row {ROW} stride {args.stride} dense {args.dense} hidden {args.hidden} "
                       f"window {args.window} batch {args.batch} offsets {not args.no_offsets}{options}".encode())
    for directory in sets(data, "train") + sets(data, "valid"):
        with open(os.path.join(directory, "manifest.json"), "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]


def loss_terms(torch, y, gain, activity, under_weight=2.0, quartic=0.0, riding=None, transient_weight=1.0):
    mask = (gain >= 0).float()
    target = gain.clamp(min=0)
    g = y[..., :BANDS]
    d = torch.sqrt(g + 1e-8) - torch.sqrt(target + 1e-8)
    weight = mask * (1 + (under_weight - 1) * (g < target).float())
    if riding is not None and transient_weight != 1.0:
        weight = weight * (1 + (transient_weight - 1) * riding)
    gains = (weight * (d * d + quartic * d ** 4)).sum() / mask.sum().clamp(min=1)
    p = y[..., BANDS].clamp(1e-6, 1 - 1e-6)
    vad = -(activity * torch.log(p) + (1 - activity) * torch.log(1 - p)).mean()
    return gains + 0.5 * vad, gains, vad


def tensors(torch, clips, start, length):
    """Rows start...start+length of every clip (start: one per clip), as float32 tensors; the
    transient step-bands as a fourth (None where the clips carry none)."""
    x = np.stack([c[0][s:s + length] for c, s in zip(clips, start)]).astype(np.float32, copy=False)
    g = np.stack([c[1][s:s + length] for c, s in zip(clips, start)]).astype(np.float32)
    a = np.stack([c[2][s:s + length] for c, s in zip(clips, start)]).astype(np.float32)
    if clips[0][3] is None:
        return torch.from_numpy(x), torch.from_numpy(g), torch.from_numpy(a), None
    r = np.stack([c[3][s:s + length] for c, s in zip(clips, start)]).astype(np.float32)
    return torch.from_numpy(x), torch.from_numpy(g), torch.from_numpy(a), torch.from_numpy(r)


class DeviceClips:
    """The training clips on the device, once (float16 features stay float16 there): a window of a
    batch is cut out there instead of stacked from numpy and copied at every update, which on the
    accelerator took about as long as the update itself. The rows are the same as `tensors`'."""

    def __init__(self, torch, clips, device):
        self.torch, self.device = torch, device
        longest = max(len(c[0]) for c in clips)
        count = len(clips)
        self.x = torch.zeros(count, longest, clips[0][0].shape[1], dtype=torch.from_numpy(clips[0][0][:1]).dtype,
                             device=device)
        self.g = torch.zeros(count, longest, clips[0][1].shape[1], dtype=torch.float16, device=device)
        self.a = torch.zeros(count, longest, dtype=torch.uint8, device=device)
        self.r = None if clips[0][3] is None else torch.zeros(count, longest, BANDS, dtype=torch.bool, device=device)
        for i, (x, g, a, r) in enumerate(clips):
            n = len(x)
            self.x[i, :n] = torch.from_numpy(x).to(device)
            self.g[i, :n] = torch.from_numpy(g).to(device)
            self.a[i, :n] = torch.from_numpy(a).to(device)
            if self.r is not None:
                self.r[i, :n] = torch.from_numpy(r).to(device)

    def tensors(self, indices, start, length):
        t = self.torch
        clip = t.as_tensor(np.asarray(indices), device=self.device)[:, None]
        rows = t.as_tensor(np.asarray(start), device=self.device)[:, None] + t.arange(length, device=self.device)
        return (self.x[clip, rows].float(), self.g[clip, rows].float(), self.a[clip, rows].float(),
                None if self.r is None else self.r[clip, rows].float())


def windows(clips, order, batch_index, args, seed):
    """One batch of the epoch: its clips' indices, the clips, their start rows and the number of
    windows through them (the shortest clip of the batch decides; a last window shorter than a
    quarter is dropped)."""
    indices = order[batch_index * args.batch:(batch_index + 1) * args.batch]
    chosen = [clips[i] for i in indices]
    rng = np.random.default_rng([*seed, batch_index])
    offsets = (rng.integers(0, args.window + 1, len(chosen)) if not args.no_offsets
               else np.zeros(len(chosen), int))
    offsets = np.minimum(offsets, [max(len(c[0]) - args.window, 0) for c in chosen])
    length = min(len(c[0]) - o for c, o in zip(chosen, offsets))
    count = length // args.window + (length % args.window >= args.window // 4)
    return indices, chosen, offsets, length, count


def evaluate(torch, model, clips, under_weight=2.0, size=32, device="cpu", fast=True, quartic=0.0, transient_weight=1.0):
    """Mean loss over every clip, whole, from a zero state (batches of clips of equal length are
    cut to their shortest)."""
    device = torch.device(device)
    model.eval()
    total, count = 0.0, 0
    order = sorted(range(len(clips)), key=lambda i: len(clips[i][0]))
    with torch.no_grad():
        for start in range(0, len(order), size):
            chosen = [clips[i] for i in order[start:start + size]]
            length = min(len(c[0]) for c in chosen)
            x, g, a, r = (None if t is None else t.to(device) for t in tensors(torch, chosen, [0] * len(chosen), length))
            y, _ = model(x, fast=fast and device.type == "cpu")
            loss, _, _ = loss_terms(torch, y, g, a, under_weight, quartic, r, transient_weight)
            total += float(loss) * len(chosen)
            count += len(chosen)
    model.train()
    return total / max(count, 1)


# --- export -------------------------------------------------------------------------------------

def weights_in_order(model):
    """Every tensor in GainModel.swift's payload order, as float32 numpy arrays."""
    p = {name: t.detach().cpu().numpy().astype(np.float32) for name, t in model.state_dict().items()}
    return [p["dense.weight"], p["dense.bias"],
            p["gru1.weight_ih_l0"], p["gru1.weight_hh_l0"], p["gru1.bias_ih_l0"], p["gru1.bias_hh_l0"],
            p["gru2.weight_ih_l0"], p["gru2.weight_hh_l0"], p["gru2.bias_ih_l0"], p["gru2.bias_hh_l0"],
            p["out.weight"], p["out.bias"]]


def fnv1a(data):
    h = 0x811C9DC5
    for byte in data:
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


def blob_bytes(model):
    """The exported blob: header (shapes, count, FNV-1a of the payload), float16 weights; and the
    weights as float16 arrays."""
    arrays = [a.astype(np.float16) for a in weights_in_order(model)]
    dense, hidden = arrays[0].shape[0], arrays[3].shape[1]
    payload = b"".join(a.astype("<f2").tobytes() for a in arrays)
    count = sum(a.size for a in arrays)
    header = b"HEARGRU1" + struct.pack("<8I", 1, FEATURES, dense, hidden, OUTPUTS, model.stride, count,
                                       fnv1a(payload))
    return header + payload, arrays


def blob_weights(path):
    """The weights of an exported blob (`blob_bytes`' inverse), float32, in `weights_in_order`'s
    order: what `reference_forward` runs."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"HEARGRU1" or len(data) < 40:
        raise ValueError(f"{path}: not a model blob of train.py's")
    _, inputs, dense, hidden, outputs, _, count, checksum = struct.unpack("<8I", data[8:40])
    payload = data[40:]
    if len(payload) != 2 * count or fnv1a(payload) != checksum:
        raise ValueError(f"{path}: damaged (its size or checksum does not match its header)")
    h3 = 3 * hidden
    shapes = [(dense, inputs), (dense,), (h3, dense), (h3, hidden), (h3,), (h3,),
              (h3, hidden), (h3, hidden), (h3,), (h3,), (outputs, 2 * hidden), (outputs,)]
    values = np.frombuffer(payload, dtype="<f2").astype(np.float32)
    arrays, at = [], 0
    for shape in shapes:
        size = int(np.prod(shape))
        arrays.append(values[at:at + size].reshape(shape))
        at += size
    return arrays


def write_atomically(path, data):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    os.replace(path + ".tmp", path)


def export(model, reference_features, blob=BLOB, reference=REFERENCE):
    data, arrays = blob_bytes(model)
    dense, hidden, count = arrays[0].shape[0], arrays[3].shape[1], sum(a.size for a in arrays)
    write_atomically(blob, data)
    with open(blob + ".sha256", "w") as f:
        f.write(f"{hashlib.sha256(data).hexdigest()}  {os.path.basename(blob)}\n")
    # Reference vectors: the exported (float16) weights run in float32 numpy, as Swift runs them.
    outputs = reference_forward([a.astype(np.float32) for a in arrays], reference_features)
    os.makedirs(os.path.dirname(os.path.abspath(reference)), exist_ok=True)
    with open(reference, "wb") as f:
        f.write(struct.pack("<3I", len(reference_features), FEATURES, OUTPUTS))
        f.write(reference_features.astype("<f4").tobytes())
        f.write(outputs.astype("<f4").tobytes())
    print(f"exported {count} weights (dense {dense}, hidden {hidden}; {len(data)} bytes) to {blob}; "
          f"{len(reference_features)} reference steps to {reference}")


def reference_forward(w, x):
    dw, db, i1, h1w, bi1, bh1, i2, h2w, bi2, bh2, ow, ob = w
    sig = lambda v: 1 / (1 + np.exp(-v))

    def gru(inp, h, wi, wh, bi, bh):
        gi, gh = wi @ inp + bi, wh @ h + bh
        H = len(h)
        r = sig(gi[:H] + gh[:H])
        z = sig(gi[H:2 * H] + gh[H:2 * H])
        n = np.tanh(gi[2 * H:] + r * gh[2 * H:])
        return (1 - z) * n + z * h

    hidden = h1w.shape[1]
    s1 = np.zeros(hidden, np.float32)
    s2 = np.zeros(hidden, np.float32)
    out = []
    for step in x:
        d = np.tanh(dw @ step + db)
        s1 = gru(d, s1, i1, h1w, bi1, bh1).astype(np.float32)
        s2 = gru(s1, s2, i2, h2w, bi2, bh2).astype(np.float32)
        out.append(sig(ow @ np.concatenate([s1, s2]) + ob))
    return np.array(out, dtype=np.float32)


def plot(history, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    updates = [h["update"] for h in history]
    plt.figure(figsize=(7, 4))
    plt.plot(updates, [h["train"] for h in history], label="train (since the last validation)")
    plt.plot(updates, [h["valid"] for h in history], label="validation")
    plt.xlabel("update")
    plt.ylabel("loss")
    plt.yscale("log")
    plt.legend()
    plt.grid(alpha=0.3)
    plt.title("hear gain model")
    plt.tight_layout()
    plt.savefig(path, dpi=100)
    plt.close()


def saved_model(torch, path):
    """The model of a checkpoint (its sizes read from its weights), and the checkpoint."""
    saved = torch.load(path, map_location="cpu")
    weights = saved["model"]
    model = build_model(torch, weights["dense.weight"].shape[0], weights["gru1.weight_hh_l0"].shape[1],
                        saved.get("stride", STRIDE))
    model.load_state_dict(weights)
    return model, saved


# --- candidates: what pick.py scores -----------------------------------------------------------

# Weight means over the last checkpoints: the same run's late checkpoints, near one another on the
# cosine's tail, averaged (a smoother estimate than any one of them, often a better one).
MEANS = (3, 5)


def checkpoint_paths(work):
    """Every checkpoint's weights that training kept (work/checkpoints/UPDATE.pt), in order."""
    return sorted(glob.glob(os.path.join(work, "checkpoints", "[0-9]*.pt")))


def candidate_model(torch, work, name):
    """A candidate's model: checkpoint UPDATE ("013006") or the weight mean of the checkpoints
    FIRST...LAST ("mean-011004-015000")."""
    paths = checkpoint_paths(work)
    stems = [os.path.basename(p)[:-3] for p in paths]
    if name.startswith("mean-"):
        first, _, last = name[5:].partition("-")
        if first not in stems or last not in stems:
            sys.exit(f"{name}: no checkpoints {first} and {last} in {work}/checkpoints")
        chosen = paths[stems.index(first):stems.index(last) + 1]
    elif name in stems:
        chosen = [paths[stems.index(name)]]
    else:
        sys.exit(f"{name}: no checkpoint of that name in {work}/checkpoints ({', '.join(stems) or 'none'})")
    models = [saved_model(torch, path)[0] for path in chosen]
    model = models[0]
    if len(models) > 1:
        states = [m.state_dict() for m in models]
        model.load_state_dict({k: sum(st[k] for st in states) / len(states) for k in states[0]})
    return model


def candidates(work):
    """The names pick.py scores: every checkpoint, and the means of the last MEANS of them."""
    stems = [os.path.basename(p)[:-3] for p in checkpoint_paths(work)]
    return stems + [f"mean-{stems[-k]}-{stems[-1]}" for k in MEANS if len(stems) >= k]


def export_candidates(torch, work):
    """Writes work/candidates/NAME.bin for every candidate that lacks one (blob only), and removes
    what is no longer one (the means of an earlier last few, when training has gone on)."""
    written = 0
    for path in glob.glob(os.path.join(work, "candidates", "*.bin")):
        if os.path.basename(path)[:-4] not in candidates(work):
            for stale in (path, path[:-4] + ".pesq.json"):
                if os.path.exists(stale):
                    os.remove(stale)
    for name in candidates(work):
        path = os.path.join(work, "candidates", name + ".bin")
        if not os.path.exists(path):
            write_atomically(path, blob_bytes(candidate_model(torch, work, name))[0])
            written += 1
    print(f"{written} candidate blobs written to {work}/candidates ({len(candidates(work))} candidates)", file=sys.stderr)


def learning_rate(update, args):
    """Share of --lr at an update: a cosine from 1 down to 0.05 over --updates, 0.05 after."""
    t = min(update / max(args.updates, 1), 1.0)
    return 0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * t))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=os.path.join(ROOT, ".build/train/data"))
    parser.add_argument("--work", default=os.path.join(ROOT, ".build/train"))
    parser.add_argument("--updates", type=int, default=15000, help="optimizer updates to train for (one per window)")
    parser.add_argument("--batch", type=int, default=32, help="clips walked through side by side")
    parser.add_argument("--window", type=int, default=400, help="steps per update (truncated backpropagation)")
    parser.add_argument("--no-offsets", action="store_true", help="start every clip at its first row")
    parser.add_argument("--dense", type=int, default=DENSE, help="width of the input layer (a multiple of 8)")
    parser.add_argument("--hidden", type=int, default=HIDDEN, help="width of each GRU (a multiple of 8)")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--under-weight", type=float, default=2.0,
                        help="weight of the gain error where the model attenuates more than the target (1: symmetric)")
    parser.add_argument("--quartic", type=float, default=0.0,
                        help="weight of the fourth power of the gain error beside its square (RNNoise's training uses 10; measured with 10 here: training/README.md)")
    parser.add_argument("--transient-weight", type=float, default=1.0,
                        help="weight of the gain error where a broadband transient of the noise rides on speech (transient_steps; 1: none)")
    parser.add_argument("--init", metavar="CHECKPOINT",
                        help="start from these weights (a checkpoint this script saved: checkpoints/UPDATE.pt, "
                             "best.pt), not from the seeded initialisation: a fine-tuning run, its own schedule")
    parser.add_argument("--valid-every", type=int, default=1000, help="updates between validations and checkpoints")
    parser.add_argument("--half-features", action="store_true",
                        help="keep the training clips' features as float16 in memory (half of the 2.2 MB a "
                             "clip; for more clips than the memory holds as float32)")
    parser.add_argument("--seed", type=int, default=1,
                        help="seeds the initial weights and the clips' order and offsets (another seed: another run of the same recipe)")
    # One thread: OpenMP's spinning threads slow this small model down 50-fold as soon as anything
    # else runs on the 2 cores (measured: 54 s against 0.66 s for one batch).
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu",
                        help="cpu (the numpy GRU, one thread) or cuda (PyTorch's GRU on the accelerator: training/accelerator.sh)")
    parser.add_argument("--fit-schedule", action="store_true",
                        help="with --minutes: after 200 updates, shorten --updates to what fits in the time (the accelerator)")
    parser.add_argument("--torch-gru", action="store_true",
                        help="PyTorch's GRU on the CPU too, as on cuda (the accelerator script's dry run)")
    parser.add_argument("--stride", type=int, default=STRIDE, choices=range(1, 9), metavar="1-8",
                        help="the model steps at every S-th frame of the suppressor and its gains hold for S frames "
                             "(1: every frame, 2.67 ms)")
    parser.add_argument("--clips-on-device", action="store_true",
                        help="cut the windows out of the clips on the device, as on cuda (the dry run checks that "
                             "both give the same rows)")
    parser.add_argument("--minutes", type=float, default=0, help="stop after this much training time (0: no limit); rerun to resume")
    parser.add_argument("--until", type=float, default=0, metavar="UNIX_TIME",
                        help="stop training at this time (seconds since 1970), however long loading the features took: "
                             "--minutes becomes what is left then (the accelerator, where the call's end is fixed)")
    parser.add_argument("--blob", default=BLOB, help="where the weights go")
    parser.add_argument("--reference", default=REFERENCE, help="where the reference vectors go")
    parser.add_argument("--export-only", action="store_true", help="export the best checkpoint and stop")
    parser.add_argument("--export-candidates", action="store_true",
                        help="write WORK/candidates/NAME.bin for every kept checkpoint and the means of the last ones (pick.py scores them) and stop")
    parser.add_argument("--export-candidate", metavar="NAME",
                        help="export candidate NAME (a checkpoint's update, 013006, or mean-FIRST-LAST; pick.py's choice) and stop")
    parser.add_argument("--init-only", action="store_true", help="export an untrained model (seeded), for wiring tests")
    parser.add_argument("--check", action="store_true", help="compare the numpy GRU with PyTorch's (outputs, gradients) and stop")
    args = parser.parse_args()
    if args.init and not os.path.isfile(args.init):
        parser.error(f"--init {args.init}: no such file")
    if args.dense % 8 or args.hidden % 8 or args.dense <= 0 or args.hidden <= 0:
        parser.error("--dense and --hidden must be positive multiples of 8 (GainModel.swift)")

    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    import torch
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    limit_blas_threads(args.threads)
    if args.check:
        test_fast_gru()
        return
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        sys.exit("--device cuda: PyTorch sees no CUDA device here")
    # On the CPU the numpy GRU (fast); elsewhere PyTorch's own (cuDNN on CUDA): the same equations.
    fast = device.type == "cpu" and not args.torch_gru
    os.makedirs(args.work, exist_ok=True)
    model = build_model(torch, args.dense, args.hidden, args.stride)
    print(f"model: dense {args.dense}, hidden {args.hidden}, {sum(p.numel() for p in model.parameters())} weights",
          file=sys.stderr)

    if args.export_candidates:
        export_candidates(torch, args.work)
        return
    if args.init_only:
        rng = np.random.default_rng(1)
        export(model, rng.normal(0, 1, (64, FEATURES)).astype(np.float32), args.blob, args.reference)
        return

    latest = os.path.join(args.work, "latest.pt")
    best = os.path.join(args.work, "best.pt")
    transients = args.transient_weight != 1.0
    valid, valid_masked = load_split(args.data, "valid", transients, stride=args.stride)
    if not valid:
        sys.exit(f"no validation clips (*.feat) under {args.data}/valid*")
    if args.export_only:
        export(saved_model(torch, best)[0], valid[0][0][:400], args.blob, args.reference)
        return
    if args.export_candidate:
        export(candidate_model(torch, args.work, args.export_candidate), valid[0][0][:400], args.blob, args.reference)
        return

    started = time.time()
    train, train_masked = load_split(args.data, "train", transients, args.half_features, args.stride)
    if not train:
        sys.exit(f"no training clips (*.feat) under {args.data}/train*")
    steps = sum(len(c[0]) for c in train)
    print(f"{len(train)} training clips ({steps} steps; {train_masked} clip bands above their speech's top ignored), "
          f"{len(valid)} validation clips ({valid_masked}); loaded in {time.time() - started:.0f} s", file=sys.stderr)
    if args.until:
        args.minutes = (args.until - time.time()) / 60
        if args.minutes <= 0.5:
            sys.exit(f"--until: {60 * args.minutes:.0f} s left once the features were loaded; nothing trained")
    model.to(device)
    on_device = DeviceClips(torch, train, device) if device.type == "cuda" or args.clips_on_device else None
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda update: learning_rate(update, args))
    state = dict(update=0, epoch=0, batch=0, history=[], best=float("inf"), best_update=0,
                 fingerprint=fingerprint(args.data, args))
    if os.path.exists(latest) and torch.load(latest, map_location=device)["state"].get("fingerprint") != state["fingerprint"]:
        aside = latest + ".other"
        os.replace(latest, aside)
        print(f"{latest} was trained on other data, sizes or for another loss: moved to {aside}, starting afresh",
              file=sys.stderr)
    if not os.path.exists(latest):
        # A fresh run: the checkpoints and candidates of an earlier one are not among its own.
        for kept in ("checkpoints", "candidates"):
            shutil.rmtree(os.path.join(args.work, kept), ignore_errors=True)
        if args.init:
            try:
                model.load_state_dict(torch.load(args.init, map_location=device)["model"])
            except (RuntimeError, KeyError) as error:
                sys.exit(f"--init {args.init}: not a checkpoint of a model of these sizes "
                         f"(dense {args.dense}, hidden {args.hidden}): {error}")
            print(f"starting from the weights of {args.init}", file=sys.stderr)
    if os.path.exists(latest):
        checkpoint = torch.load(latest, map_location=device)
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        scheduler.load_state_dict(checkpoint["scheduler"])
        torch.set_rng_state(checkpoint["torch_rng"].cpu())
        state = checkpoint["state"]
        print(f"resumed at update {state['update']} (epoch {state['epoch'] + 1}, batch {state['batch']}; "
              f"best validation loss {state['best']:.5f} at update {state['best_update']})", file=sys.stderr)

    def checkpoint(train_loss):
        validation = evaluate(torch, model, valid, args.under_weight, device=device, fast=fast, quartic=args.quartic,
                              transient_weight=args.transient_weight)
        elapsed = time.time() - started
        state["history"].append(dict(update=state["update"], epoch=state["epoch"] + state["batch"] * args.batch / len(train),
                                     train=train_loss, valid=validation, lr=optimizer.param_groups[0]["lr"]))
        if validation < state["best"]:
            state["best"], state["best_update"] = validation, state["update"]
            torch.save(dict(model=model.state_dict(), update=state["update"], stride=args.stride), best)
        # Every checkpoint's weights stay (250 kB each): pick.py chooses among them by PESQ-WB.
        os.makedirs(os.path.join(args.work, "checkpoints"), exist_ok=True)
        torch.save(dict(model=model.state_dict(), update=state["update"], valid=validation, stride=args.stride),
                   os.path.join(args.work, "checkpoints", f"{state['update']:06d}.pt"))
        torch.save(dict(model=model.state_dict(), optimizer=optimizer.state_dict(), scheduler=scheduler.state_dict(),
                        torch_rng=torch.get_rng_state(), state=state), latest + ".tmp")
        os.replace(latest + ".tmp", latest)
        plot(state["history"], os.path.join(args.work, "loss.png"))
        with open(os.path.join(args.work, "history.json"), "w") as f:
            json.dump(state["history"], f, indent=1)
        print(f"\nupdate {state['update']}: train {train_loss:.5f}, validation {validation:.5f} "
              f"(best {state['best']:.5f} at update {state['best_update']}); "
              f"{done / max(elapsed, 1e-9):.2f} updates/s this run", file=sys.stderr)

    from tqdm import tqdm
    started = time.time()
    done, total, count = 0, 0.0, 0
    next_check = (state["update"] // args.valid_every + 1) * args.valid_every
    batches = math.ceil(len(train) / args.batch)
    progress = tqdm(total=args.updates, initial=state["update"], desc="updates", file=sys.stderr, smoothing=0.05,
                    mininterval=5)
    stop = None
    while stop is None and state["update"] < args.updates:
        seed = [1000 * args.seed, state["epoch"]]
        order = np.random.default_rng(seed).permutation(len(train))
        while state["batch"] < batches:
            indices, chosen, offsets, length, windows_count = windows(train, order, state["batch"], args, seed)
            hidden = None
            for w in range(windows_count):
                start = offsets + w * args.window
                span = min(args.window, length - w * args.window)
                if on_device is not None:
                    x, g, a, r = on_device.tensors(indices, start, span)
                else:
                    x, g, a, r = (None if t is None else t.to(device, non_blocking=True)
                                  for t in tensors(torch, chosen, start, span))
                y, hidden = model(x, hidden, fast=fast)
                hidden = tuple(h.detach() for h in hidden)
                loss, _, _ = loss_terms(torch, y, g, a, args.under_weight, args.quartic, r, args.transient_weight)
                optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                scheduler.step()
                state["update"] += 1
                done += 1
                # Summed where it is computed: reading it back every update would make the CPU
                # wait for the device at every update (on the accelerator, once every 50).
                total = total + loss.detach()
                count += 1
                progress.update(1)
                if device.type == "cpu" or done % 50 == 0:
                    progress.set_postfix(loss=f"{float(total) / count:.4f}", epoch=state["epoch"] + 1,
                                         per_s=f"{done / max(time.time() - started, 1e-9):.2f}")
                if args.fit_schedule and done == 200 and args.minutes:
                    if device.type == "cuda":
                        torch.cuda.synchronize()
                    # The cosine ends where the time does: the updates that fit, at this run's pace.
                    fitting = state["update"] + int(done / (time.time() - started) * (60 * args.minutes - (time.time() - started)))
                    if fitting < args.updates:
                        args.updates = max(fitting, state["update"] + 1)
                        progress.total = args.updates
                        print(f"\n{args.updates} updates fit in {args.minutes:.1f} minutes: the schedule ends there",
                              file=sys.stderr)
                if state["update"] >= args.updates:
                    stop = "updates"
                    break
            state["batch"] += 1
            if stop is None and args.minutes and time.time() - started > 60 * args.minutes:
                stop = "minutes"
            if stop or state["update"] >= next_check:
                checkpoint(float(total) / max(count, 1))
                total, count = 0.0, 0
                next_check = (state["update"] // args.valid_every + 1) * args.valid_every
            if stop:
                break
        if stop is None:
            state["epoch"] += 1
            state["batch"] = 0
    progress.close()
    if stop == "minutes":
        print(f"time limit reached at update {state['update']}; run again to resume", file=sys.stderr)
    elif count:  # the run had ended before: the last stretch since the checkpoint
        checkpoint(float(total) / count)
    print(f"{done} updates in {time.time() - started:.0f} s ({done / max(time.time() - started, 1e-9):.2f} updates/s)",
          file=sys.stderr)

    model, saved = saved_model(torch, best)
    print(f"exporting the checkpoint of update {saved.get('update')} (validation loss {state['best']:.5f})", file=sys.stderr)
    export(model, valid[0][0][:400], args.blob, args.reference)


if __name__ == "__main__":
    main()
