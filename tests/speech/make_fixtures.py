#!/usr/bin/python3
"""Fixtures of the speech tests, made at test time (nothing is committed).

    /usr/bin/python3 tests/speech/make_fixtures.py OUT_DIR

writes into OUT_DIR:
  hamming.tarn   random speech-shaped model (as tests.goldens' speech
                 case) with the ASR example's recipe (features.RECIPE) and
                 random feature statistics; hamming.json is that recipe
  povey.tarn     the same with tests.goldens' speech recipe (Povey
                 window, 20-7600 Hz, log floor 1e-10); povey.json
  hann.tarn      the same with a Hann window, a 1024-point FFT, 0-7000 Hz,
                 no DC removal, no pre-emphasis, no statistics; hann.json
  energy.tarn    a hand-set model whose best label is "a" when the mean
                 log-mel energy of its 9 stacked frames exceeds -8 and the
                 blank otherwise: speech -> "a", silence -> blank
  noaudio.tarn   a speech-shaped model without an AudioFrontEnd
  nolabels.tarn  with a front end but without labels
  speech.wav     espeak-ng "hello world open the door", 16 kHz mono 16-bit
  speech.raw     the same samples as raw 16-bit little-endian PCM
  two.wav        0.3 s silence, "play music", 1.5 s silence, "stop", 1 s
  speech22.wav, stereo.wav, float.wav, speech.flac, ulaw.wav, adpcm.wav,
  truncated.wav, header_only.wav, garbage.wav: for the CLI's input checks
  manifest.tsv   speech.wav and two.wav as a corpus manifest whose
                 transcripts are energy.tarn's ("a", "a a"); words_a.txt
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples" / "asr"))

from converter.convert import convert_state_dict  # noqa: E402
from tests.goldens import CASES, _SPEECH_LABELS, build_model  # noqa: E402
from converter.reference import LinearTransformer, ModelConfig  # noqa: E402
import features  # noqa: E402  examples/asr/features.py


def recipes(rng):
    hamming = dict(features.RECIPE)
    hamming["feature_mean"] = rng.normal(-6.0, 2.0, 40).tolist()
    hamming["feature_std"] = rng.uniform(2.0, 4.0, 40).tolist()
    povey = dict(CASES["speech"](np.random.default_rng(0)).audio)
    povey.update(preemphasis=0.97, remove_dc_offset=True)
    hann = dict(features.RECIPE)
    hann.update(window="hann", fft_size=1024, remove_dc_offset=False, preemphasis=0.0, low_frequency=0.0, high_frequency=7000.0)
    del hann["feature_mean"], hann["feature_std"]
    return {"hamming": hamming, "povey": povey, "hann": hann}


def energy_model() -> LinearTransformer:
    config = ModelConfig(
        d_model=4, num_layers=1, num_heads=1, d_key=4, d_value=4, d_ff=4, input_kind="frames", input_dim=40,
        stack_window=9, stack_hop=3, input_activation="gelu", norm_placement="pre", activation="gelu",
        conv_kernel=7, final_norm=True, output_dim=len(_SPEECH_LABELS),
    )
    model = LinearTransformer(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.ones_like(p) if ".norm" in f".{name}" and name.endswith("weight") else torch.zeros_like(p))
        # s = mean of the 360 stacked features + 8; x = gelu([s, -s, 0, 0]).
        model.input_projection.weight[0, :] = 1.0 / 360
        model.input_projection.weight[1, :] = -1.0 / 360
        model.input_projection.bias[0] = 8.0
        model.input_projection.bias[1] = -8.0
        # Blocks are identities (zero branches); the final LayerNorm makes
        # [v, 0, 0, 0] -> [1.73, -.58, -.58, -.58], [0, v, 0, 0] likewise.
        model.head.weight[_SPEECH_LABELS.index("a"), 0] = 10.0
        model.head.weight[_SPEECH_LABELS.index("<blank>"), 1] = 10.0
    return model, config


def run(*args, **kwargs):
    subprocess.run([str(a) for a in args], check=True, **kwargs)


def make_audio(out: Path):
    # Every sox call takes -D: sox dithers by default, and every run's audio
    # then differed by a few LSBs, so no failure could be replayed.
    tmp = out / "tmp"
    tmp.mkdir(exist_ok=True)

    def say(text, name):
        run("espeak-ng", "-v", "en-us", "-w", tmp / f"{name}22.wav", text)
        run("sox", "-D", tmp / f"{name}22.wav", "-r", "16000", "-b", "16", "-c", "1", tmp / f"{name}.wav")
        return tmp / f"{name}.wav"

    speech = say("hello world open the door", "speech")
    shutil.copy(speech, out / "speech.wav")
    shutil.copy(tmp / "speech22.wav", out / "speech22.wav")
    run("sox", "-D", speech, "-t", "raw", "-e", "signed-integer", "-b", "16", "-L", out / "speech.raw")
    run("sox", "-D", speech, "-c", "2", out / "stereo.wav")
    run("sox", "-D", speech, "-e", "floating-point", "-b", "32", out / "float.wav")
    run("sox", "-D", speech, out / "speech.flac")
    run("sox", "-D", speech, "-e", "u-law", out / "ulaw.wav")
    run("sox", "-D", speech, "-e", "ima-adpcm", out / "adpcm.wav")
    data = (out / "speech.wav").read_bytes()
    (out / "truncated.wav").write_bytes(data[: len(data) // 2])
    (out / "header_only.wav").write_bytes(data[:44])
    (out / "garbage.wav").write_bytes(np.random.default_rng(1).integers(0, 256, 5000, dtype=np.uint8).tobytes())

    play, stop = say("play music", "play"), say("stop", "stop")
    silence = lambda seconds, name: run("sox", "-D", "-n", "-r", "16000", "-b", "16", "-c", "1", tmp / name, "trim", "0", str(seconds))  # noqa: E731
    silence(0.3, "s03.wav")
    silence(1.5, "s15.wav")
    silence(1.0, "s10.wav")
    run("sox", "-D", tmp / "s03.wav", play, tmp / "s15.wav", stop, tmp / "s10.wav", out / "two.wav")
    shutil.rmtree(tmp)


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(5)
    config = CASES["speech"](np.random.default_rng(0)).config
    model = build_model(config, seed=3)
    state = model.state_dict()
    meta = {"source": "tests/speech/make_fixtures.py", "date": "fixed"}  # the same bytes on every run
    for name, recipe in recipes(rng).items():
        convert_state_dict(state, config, out / f"{name}.tarn", labels=_SPEECH_LABELS, audio=recipe, metadata=meta)
        (out / f"{name}.json").write_text(json.dumps(recipe, indent=1) + "\n")
    convert_state_dict(state, config, out / "noaudio.tarn", labels=_SPEECH_LABELS, metadata=meta)
    convert_state_dict(state, config, out / "nolabels.tarn", audio=recipes(rng)["hamming"], metadata=meta)
    energy, energy_config = energy_model()
    recipe = dict(features.RECIPE, feature_mean=[0.0] * 40, feature_std=[1.0] * 40)
    convert_state_dict(energy.state_dict(), energy_config, out / "energy.tarn", labels=_SPEECH_LABELS, audio=recipe, metadata=meta)
    make_audio(out)
    (out / "manifest.tsv").write_text(
        "path\ttranscript\tvoice\tsplit\tsettings\n"
        "speech.wav\ta\tespeak-ng/en-us+m3\teval_espeak\t\n"
        "two.wav\ta a\tespeak-ng/en-us+f2\teval_espeak\t\n"
        "speech.wav\ta\tflite/slt\teval_slt\t\n"
    )
    (out / "words_a.txt").write_text("a\n")
    print(f"speech fixtures in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
