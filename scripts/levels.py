#!/usr/bin/env python3
"""Levels and noise figures for `make demo` (standard library only).

levels.py BEFORE.wav RECORDED.wav AFTER.wav LEAD_IN_SECONDS
Reads the played file and the raw recording (32-bit float WAV), drops the recording's silence
before the audio arrived, writes AFTER.wav (same length as BEFORE), and prints a table: peak and
speech level, the noise floor (the last second of the lead-in, which holds noise alone), and the
speech-to-noise ratio.
"""
import array
import math
import struct
import sys


def read(path):
    data = open(path, "rb").read()
    if data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise SystemExit(f"{path}: not a WAV file")
    offset, rate, channels, fmt, bits = 12, 0, 0, 0, 0
    while offset + 8 <= len(data):
        chunk, size = data[offset:offset + 4], struct.unpack("<I", data[offset + 4:offset + 8])[0]
        body = data[offset + 8:]
        if chunk == b"fmt ":
            fmt, channels, rate = struct.unpack("<HHI", body[:8])
            bits = struct.unpack("<H", body[14:16])[0]
            if fmt == 0xFFFE:
                fmt = struct.unpack("<H", body[24:26])[0]
        elif chunk == b"data":
            # A recorder stopped by a signal may leave the size unset: take the rest of the file.
            end = len(body) if size in (0, 0xFFFFFFFF) or size > len(body) else size
            if (fmt, bits) != (3, 32):
                raise SystemExit(f"{path}: expected 32-bit float, got format {fmt}/{bits} bits")
            samples = array.array("f")
            samples.frombytes(body[:end - end % 4])
            return rate, list(samples[::channels])
        offset += 8 + size + (size & 1)
    raise SystemExit(f"{path}: no data")


def write(path, rate, samples):
    payload = array.array("f", samples).tobytes()
    header = b"RIFF" + struct.pack("<I", 36 + len(payload)) + b"WAVEfmt " + struct.pack(
        "<IHHIIHH", 16, 3, 1, rate, rate * 4, 4, 32) + b"data" + struct.pack("<I", len(payload))
    open(path, "wb").write(header + payload)


def db(x):
    return 20 * math.log10(x) if x > 0 else float("-inf")


def rms(samples):
    return math.sqrt(sum(x * x for x in samples) / max(1, len(samples)))


def figures(rate, samples, lead_in):
    noise = samples[int((lead_in - 1.0) * rate):int((lead_in - 0.1) * rate)]  # noise alone
    speech = samples[int(lead_in * rate):]
    peak = max(abs(x) for x in samples)
    return {"peak": db(peak), "rms": db(rms(speech)), "noise": db(rms(noise)),
            "snr": db(rms(speech)) - db(rms(noise))}


def main():
    before_path, recorded_path, after_path = sys.argv[1:4]
    lead_in = float(sys.argv[4])
    rate, before = read(before_path)
    recorded_rate, recorded = read(recorded_path)
    if recorded_rate != rate:
        raise SystemExit(f"rates differ: {rate} and {recorded_rate}")
    start = next((i for i, x in enumerate(recorded) if abs(x) > 1e-6), None)
    if start is None:
        raise SystemExit("the recording is silent: the chain passed nothing")
    after = recorded[start:start + len(before)]
    write(after_path, rate, after)
    b, a = figures(rate, before, lead_in), figures(rate, after, lead_in)
    print()
    print(f"{'':28}{'before':>10}{'after':>10}{'change':>10}")
    rows = [("peak level (dBFS)", "peak"), ("speech RMS level (dBFS)", "rms"),
            ("noise floor (dBFS RMS)", "noise"), ("speech to noise (dB)", "snr")]
    for title, key in rows:
        print(f"{title:28}{b[key]:10.1f}{a[key]:10.1f}{a[key] - b[key]:+10.1f}")
    print()


if __name__ == "__main__":
    main()
