"""Trains the learned noise suppressor's gain model and exports its weights (`make train`).

Input: the rows hear-features wrote (Sources/hear-features: the suppressor's own features, then the
band powers of the noisy stream, the clean speech and the noise, one row per model step), from
every set of a split: DATA/train and DATA/valid at 48 kHz, DATA/train-16k, DATA/train-8k (and the
same for valid) at the rates their names give.
Targets, per band: the ideal ratio mask sqrt(S / (S + N)) from the clean and noise band powers
(ignored where the noisy band is empty: a band above a band-limited stream's top); per step:
speech activity (the clean speech's mean band level above -75 dB).

Model (mirrored by Sources/HearDSP/NoiseSuppression/GainModel.swift): dense 130 -> 96 (tanh),
GRU 96, GRU 96, dense [h1; h2] -> 33 (sigmoid: 32 band gains, speech probability); 130k weights.
Loss: squared error of the gains' square roots (RNNoise's measure), counted double where the model
attenuates more than the target (a lost syllable costs more than a little noise), plus 0.5 x the
speech activity's cross-entropy.

Runs on the CPU with Debian's python3-torch; fixed seeds; a checkpoint after every epoch, and a run
resumes from the last one. The checkpoint with the lowest validation loss is exported:
  Sources/CHearModel/hear-model.bin (+ .sha256)   float16 weights, header with shapes and FNV-1a
  Tests/HearDSPTests/Fixtures/reference-vectors.bin            features in, outputs out, from the exported
                                                  (float16-rounded) weights in float32 numpy
  .build/train/loss.png                           the loss curves
"""

import argparse
import glob
import hashlib
import json
import os
import struct
import sys
import time

import numpy as np

BANDS = 32
FEATURES = 4 * BANDS + 2
ROW = FEATURES + 3 * BANDS
# Changes with what a checkpoint is trained for (row layout, targets, loss): a run resumes only
# from a checkpoint of the same version and data (see `fingerprint`).
LOSS_VERSION = 1
DENSE, HIDDEN, OUTPUTS, STRIDE = 96, 96, BANDS + 1, 1
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BLOB = os.path.join(ROOT, "Sources/CHearModel/hear-model.bin")
REFERENCE = os.path.join(ROOT, "Tests/HearDSPTests/Fixtures/reference-vectors.bin")


def sets(data, split):
    """The directories of one split: SPLIT (48 kHz) and SPLIT-16k, SPLIT-8k (Makefile's TRAIN_SETS)."""
    return sorted(d for d in glob.glob(os.path.join(data, split + "*")) if os.path.isdir(d))


def load(directory, limit=None):
    """Per clip: features (T, 130), gain targets (T, 32; -1 = ignore), activity (T,)."""
    clips = []
    for path in sorted(glob.glob(os.path.join(directory, "*.feat")))[:limit]:
        rows = np.fromfile(path, dtype="<f4")
        rows = rows.reshape(-1, ROW)
        x = rows[:, :FEATURES]
        noisy = rows[:, FEATURES:FEATURES + BANDS]
        clean = rows[:, FEATURES + BANDS:FEATURES + 2 * BANDS]
        noise = rows[:, FEATURES + 2 * BANDS:]
        gain = np.sqrt(clean / np.maximum(clean + noise, 1e-20))
        gain = np.where(noisy > 1e-10, np.clip(gain, 0, 1), -1.0)
        activity = (np.mean(clean, axis=1) > 10 ** -7.5).astype(np.float32)
        clips.append((x.astype(np.float32), gain.astype(np.float32), activity))
    return clips


def build_model(torch):
    nn = torch.nn

    class GainModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.dense = nn.Linear(FEATURES, DENSE)
            self.gru1 = nn.GRU(DENSE, HIDDEN, batch_first=True)
            self.gru2 = nn.GRU(HIDDEN, HIDDEN, batch_first=True)
            self.out = nn.Linear(2 * HIDDEN, OUTPUTS)

        def forward(self, x):
            d = torch.tanh(self.dense(x))
            h1, _ = self.gru1(d)
            h2, _ = self.gru2(h1)
            return torch.sigmoid(self.out(torch.cat([h1, h2], dim=-1)))

    return GainModel()


def fingerprint(data):
    """What a checkpoint belongs to: the loss version, the model stride and the data sets' manifests."""
    h = hashlib.sha256(f"loss {LOSS_VERSION} row {ROW} stride {STRIDE}".encode())
    for directory in sets(data, "train") + sets(data, "valid"):
        with open(os.path.join(directory, "manifest.json"), "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]


def loss_terms(torch, y, gain, activity):
    mask = (gain >= 0).float()
    target = gain.clamp(min=0)
    g = y[..., :BANDS]
    d = torch.sqrt(g + 1e-8) - torch.sqrt(target + 1e-8)
    weight = mask * (1 + (g < target).float())
    gains = (weight * d * d).sum() / mask.sum().clamp(min=1)
    p = y[..., BANDS].clamp(1e-6, 1 - 1e-6)
    vad = -(activity * torch.log(p) + (1 - activity) * torch.log(1 - p)).mean()
    return gains + 0.5 * vad, gains, vad


def batches(clips, size, rng):
    order = rng.permutation(len(clips))
    for start in range(0, len(order), size):
        chosen = [clips[i] for i in order[start:start + size]]
        length = min(len(c[0]) for c in chosen)
        yield (np.stack([c[0][:length] for c in chosen]), np.stack([c[1][:length] for c in chosen]),
               np.stack([c[2][:length] for c in chosen]))


def tensors(torch, batch):
    return tuple(torch.from_numpy(np.ascontiguousarray(b)) for b in batch)


def evaluate(torch, model, clips, size=32):
    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for batch in batches(clips, size, np.random.default_rng(0)):
            x, g, a = tensors(torch, batch)
            loss, _, _ = loss_terms(torch, model(x), g, a)
            total += float(loss) * len(x)
            count += len(x)
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


def export(model, reference_features):
    arrays = [a.astype(np.float16) for a in weights_in_order(model)]
    payload = b"".join(a.astype("<f2").tobytes() for a in arrays)
    count = sum(a.size for a in arrays)
    header = b"HEARGRU1" + struct.pack("<8I", 1, FEATURES, DENSE, HIDDEN, OUTPUTS, STRIDE, count, fnv1a(payload))
    blob = header + payload
    with open(BLOB + ".tmp", "wb") as f:
        f.write(blob)
    os.replace(BLOB + ".tmp", BLOB)
    with open(BLOB + ".sha256", "w") as f:
        f.write(f"{hashlib.sha256(blob).hexdigest()}  hear-model.bin\n")
    # Reference vectors: the exported (float16) weights run in float32 numpy, as Swift runs them.
    outputs = reference_forward([a.astype(np.float32) for a in arrays], reference_features)
    with open(REFERENCE, "wb") as f:
        f.write(struct.pack("<3I", len(reference_features), FEATURES, OUTPUTS))
        f.write(reference_features.astype("<f4").tobytes())
        f.write(outputs.astype("<f4").tobytes())
    print(f"exported {count} weights ({len(blob)} bytes) to {BLOB}; {len(reference_features)} reference steps")


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

    s1 = np.zeros(HIDDEN, np.float32)
    s2 = np.zeros(HIDDEN, np.float32)
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
    epochs = [h["epoch"] for h in history]
    plt.figure(figsize=(7, 4))
    plt.plot(epochs, [h["train"] for h in history], label="train")
    plt.plot(epochs, [h["valid"] for h in history], label="validation")
    plt.xlabel("epoch")
    plt.ylabel("loss")
    plt.yscale("log")
    plt.legend()
    plt.grid(alpha=0.3)
    plt.title("hear gain model")
    plt.tight_layout()
    plt.savefig(path, dpi=100)
    plt.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=os.path.join(ROOT, ".build/train/data"))
    parser.add_argument("--work", default=os.path.join(ROOT, ".build/train"))
    parser.add_argument("--epochs", type=int, default=60)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--lr", type=float, default=2e-3)
    # One thread: OpenMP's spinning threads slow this small model down 50-fold as soon as anything
    # else runs on the 2 cores (measured: 54 s against 0.66 s for one batch).
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--minutes", type=float, default=0, help="stop after this much training time (0: no limit); rerun to resume")
    parser.add_argument("--export-only", action="store_true", help="export the best checkpoint and stop")
    parser.add_argument("--init-only", action="store_true", help="export an untrained model (seeded), for wiring tests")
    args = parser.parse_args()

    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    import torch
    torch.manual_seed(1)
    torch.set_num_threads(args.threads)
    os.makedirs(args.work, exist_ok=True)
    model = build_model(torch)
    print(f"model: {sum(p.numel() for p in model.parameters())} weights", file=sys.stderr)

    if args.init_only:
        rng = np.random.default_rng(1)
        export(model, rng.normal(0, 1, (64, FEATURES)).astype(np.float32))
        return

    latest = os.path.join(args.work, "latest.pt")
    best = os.path.join(args.work, "best.pt")
    valid = [clip for d in sets(args.data, "valid") for clip in load(d)]
    if args.export_only:
        model.load_state_dict(torch.load(best)["model"])
        export(model, valid[0][0][:400])
        return

    train = [clip for d in sets(args.data, "train") for clip in load(d)]
    print(f"{len(train)} training clips ({sum(len(c[0]) for c in train)} steps), {len(valid)} validation clips",
          file=sys.stderr)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda e: 1 / (1 + 0.1 * e))
    state = dict(epoch=0, history=[], best=float("inf"), fingerprint=fingerprint(args.data))
    if os.path.exists(latest) and torch.load(latest)["state"].get("fingerprint") != state["fingerprint"]:
        aside = latest + ".other"
        os.replace(latest, aside)
        print(f"{latest} was trained on other data or for another loss: moved to {aside}, starting afresh",
              file=sys.stderr)
    if os.path.exists(latest):
        checkpoint = torch.load(latest)
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        scheduler.load_state_dict(checkpoint["scheduler"])
        state = checkpoint["state"]
        print(f"resumed after epoch {state['epoch']} (best validation loss {state['best']:.5f})", file=sys.stderr)

    from tqdm import tqdm
    started = time.time()
    while state["epoch"] < args.epochs:
        epoch = state["epoch"] + 1
        rng = np.random.default_rng(1000 + epoch)
        total, count = 0.0, 0
        progress = tqdm(list(batches(train, args.batch, rng)), desc=f"epoch {epoch}/{args.epochs}", file=sys.stderr)
        for batch in progress:
            x, g, a = tensors(torch, batch)
            loss, gains, vad = loss_terms(torch, model(x), g, a)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            total += float(loss) * len(x)
            count += len(x)
            progress.set_postfix(loss=f"{total / count:.4f}")
        scheduler.step()
        validation = evaluate(torch, model, valid)
        state["history"].append(dict(epoch=epoch, train=total / count, valid=validation))
        state["epoch"] = epoch
        if validation < state["best"]:
            state["best"] = validation
            torch.save(dict(model=model.state_dict(), epoch=epoch), best)
        torch.save(dict(model=model.state_dict(), optimizer=optimizer.state_dict(),
                        scheduler=scheduler.state_dict(), state=state), latest + ".tmp")
        os.replace(latest + ".tmp", latest)
        plot(state["history"], os.path.join(args.work, "loss.png"))
        with open(os.path.join(args.work, "history.json"), "w") as f:
            json.dump(state["history"], f, indent=1)
        print(f"epoch {epoch}: train {total / count:.5f}, validation {validation:.5f} (best {state['best']:.5f})",
              file=sys.stderr)
        if args.minutes and time.time() - started > 60 * args.minutes:
            print("time limit reached; run again to resume", file=sys.stderr)
            break

    model.load_state_dict(torch.load(best)["model"])
    export(model, valid[0][0][:400])


if __name__ == "__main__":
    main()
