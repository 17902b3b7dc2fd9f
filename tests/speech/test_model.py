"""The bundled speech model in tarn against the PyTorch reference it was
trained as: for each bundled sample WAV, features from examples/asr/features.py
(the recipe's one Python definition) go through `tarn run` and through
converter/reference.py's LinearTransformer loaded from asr.pt, its weights
as the file stores them (tests.goldens.model_as_stored); every
step's 29 logits must agree within 1e-4, relative to max |logit| where that
exceeds 1 (as tests/golden). The front end is tested on its own by test_front_end.py.
Run by ctest (speech_model_vs_pytorch), which passes `tarn` in the
environment (conftest.py).
"""

import json
import shutil
import subprocess
import sys
import wave
from pathlib import Path

import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
ASR = ROOT / "examples" / "asr"
sys.path.insert(0, str(ASR))

import features  # noqa: E402
from eval import edit_distance  # noqa: E402
from tests.goldens import model_as_stored, scaled_error, stamped, stored_bytes_by_dtype  # noqa: E402
from converter.reference import LinearTransformer, ModelConfig  # noqa: E402

TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def trained():
    """The bundled model as PyTorch (its checkpoint, asr.pt, with the values
    asr.tarn stores: its matrices' dtype is the one most of its bytes are in)
    and its recipe."""
    checkpoint = torch.load(ASR / "model" / "asr.pt", map_location="cpu", weights_only=False)
    model = LinearTransformer(ModelConfig.from_dict(checkpoint["config"]))
    model.load_state_dict(checkpoint["state_dict"])
    stored = stored_bytes_by_dtype(ASR / "model" / "asr.tarn")
    model = model_as_stored(model, max(stored, key=stored.get))
    model.eval()
    return model, checkpoint["recipe"]


WAVS = sorted((ASR / "samples").glob("*.wav"))


def test_there_are_samples():
    assert WAVS, "no sample WAVs in examples/asr/samples"


@pytest.mark.parametrize("wav", WAVS, ids=lambda wav: wav.name)
def test_sample_logits_match_pytorch(wav, trained, tarn, tmp_path):
    model, recipe = trained
    frames_path, logits_path = tmp_path / "frames.npy", tmp_path / "logits.npy"
    frames = features.features(features.read_wav(str(wav)), recipe).astype(np.float32)
    np.save(frames_path, frames)
    r = subprocess.run([tarn, "run", str(ASR / "model" / "asr.tarn"), "--input", str(frames_path),
                        "--output", str(logits_path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    with torch.no_grad():
        expected = model(torch.from_numpy(frames)[None])[0].numpy()
    error = scaled_error(np.load(logits_path), expected)
    print(f"{wav.name}: {len(expected)} steps, max |logit| {np.abs(expected).max():.1f}, "
          f"scaled error {error:.2e} (bound {TOLERANCE:g})")
    assert error <= TOLERANCE


def cut_after_speech(wav):
    """The sample up to its last sample above 1 % of its peak, where its
    speech ends."""
    samples = features.read_wav(str(wav))
    loud = np.flatnonzero(np.abs(samples) > 0.01 * np.abs(samples).max())
    return samples, samples[: loud[-1] + 1]


def expected_last_words():
    """Each sample's transcript's last word (samples/transcripts.tsv): only
    it is compared, as greedy decoding misreads an earlier word in two of
    the samples."""
    rows = (ASR / "samples" / "transcripts.tsv").read_text().splitlines()[1:]
    return {name: text.split()[-1] for name, text in (row.split("\t") for row in rows)}


def write_samples(path, samples):
    """Float samples in [-1, 1) -> a 16-bit WAV."""
    features.write_wav(path, np.round(samples * 32768).clip(-32768, 32767))


def transcribe(tarn, path, *extra, model=ASR / "model" / "asr.tarn"):
    """`tarn transcribe --json` on path: its JSON lines."""
    r = subprocess.run([tarn, "transcribe", str(model), str(path), "-q", "--json", *extra],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return [json.loads(line) for line in r.stdout.splitlines()]


def test_a_stream_that_ends_on_its_last_word_keeps_it(tarn, tmp_path):
    """Each sample cut where its speech ends: the model emits a word's labels
    a few steps after its audio, so `tarn transcribe` must step it over
    silence at the end of the stream (--final-silence-ms, 300 by default)
    for the last word to arrive. The reference is the sample's transcript."""
    expected = expected_last_words()
    lost_without = []
    for wav in WAVS:
        samples, cut = cut_after_speech(wav)
        path = tmp_path / wav.name
        write_samples(path, cut)
        result = transcribe(tarn, path)[-1]
        print(f"{wav.name}: cut at {len(cut) / 16000:.3f} s of {len(samples) / 16000:.3f}: {result['text']!r}")
        assert result["text"].split()[-1:] == [expected[wav.name]], (wav.name, result)
        assert all(w["end"] <= result["duration"] + 1e-9 for w in result["words"]), result
        if transcribe(tarn, path, "--final-silence-ms", "0")[-1]["text"].split()[-1:] != [expected[wav.name]]:
            lost_without.append(wav.name)
    # The cut reaches the model's lag: without the silence, words are lost.
    assert lost_without, "every sample kept its last word without the final silence: the test shows nothing"


def test_an_utterance_cut_by_max_length_keeps_its_last_word(tarn, tmp_path):
    """Each sample cut where its speech ends, then a second of silence, with
    --max-utterance-ms ending the utterance 60 ms before the cut (the step
    whose frames reach the cut): the limit falls right after the last word,
    before the model has emitted its labels, and the session restarts for
    the silence after it. The forced end steps the model over
    --final-silence-ms of silence first, as the end of a stream does, so
    the utterance keeps its last word; with 0, words are lost."""
    expected = expected_last_words()
    lost_without = []
    for wav in WAVS:
        _, cut = cut_after_speech(wav)
        path = tmp_path / wav.name
        write_samples(path, np.concatenate([cut, np.zeros(16000)]))
        limit = ["--utterances", "--max-utterance-ms", str(len(cut) * 1000 // 16000 - 60)]
        utterances = transcribe(tarn, path, *limit)
        print(f"{wav.name}: {[u['text'] for u in utterances]}")
        assert len(utterances) == 1, (wav.name, utterances)
        assert utterances[0]["text"].split()[-1:] == [expected[wav.name]], (wav.name, utterances)
        assert utterances[0]["end"] <= len(cut) / 16000 + 0.1, utterances  # within the audio heard by then
        cut_short = transcribe(tarn, path, *limit, "--final-silence-ms", "0")
        if not cut_short or cut_short[0]["text"].split()[-1:] != [expected[wav.name]]:
            lost_without.append(wav.name)
    assert lost_without, "every utterance kept its last word without the silence: the test shows nothing"


def test_a_word_begun_as_an_endpoint_falls_is_kept(tarn, tmp_path):
    """The two `slt` samples back to back: the first one's trailing silence
    is the only gap, and the endpoint (500 ms without a label) falls while
    the second one's first word, "six", is already heard but its labels are
    not yet out. The next utterance hears those 500 ms again, so it keeps
    the word: the two utterances are what each sample gives alone. Before,
    the reset session lost "six" (and 1093 of 1200 words were left of the
    samples 50 times over)."""
    names = [ASR / "samples" / "slt_012600.wav", ASR / "samples" / "slt_012603.wav"]
    alone = [transcribe(tarn, wav)[-1]["text"] for wav in names]
    path = tmp_path / "back_to_back.wav"
    write_samples(path, np.concatenate([features.read_wav(str(wav)) for wav in names]))
    utterances = transcribe(tarn, path, "--utterances")
    print(f"alone {alone}, back to back {[u['text'] for u in utterances]}")
    assert [u["text"] for u in utterances] == alone
    assert utterances[0]["end"] == pytest.approx(utterances[1]["start"])
    assert utterances[1]["words"][0]["start"] < 1.44 + 0.5  # "six", in the second file


def test_an_utterance_without_a_length_limit_keeps_every_word(tarn, tmp_path):
    """The samples 50 times over (7.5 min) as one stream, with neither
    endpoints nor a length limit: the decoder's memory is fixed, so the
    utterance is cut every 4096 steps (2 min) as a length limit cuts it,
    keeping its words. It used to stop taking labels at 4096 instead,
    dropping the last 100 s without a word."""
    rows = (ASR / "samples" / "transcripts.tsv").read_text().splitlines()[1:]
    texts = dict(row.split("\t") for row in rows)
    names = sorted(texts)
    once = np.concatenate([features.read_wav(str(ASR / "samples" / name)) for name in names])
    path = tmp_path / "long.wav"
    write_samples(path, np.tile(once, 50))
    seconds = 50 * len(once) / 16000
    utterances = transcribe(tarn, path, "--utterances", "--endpoint-ms", "0", "--max-utterance-ms", "0")
    words = [w["word"] for u in utterances for w in u["words"]]
    expected = 50 * sum(len(texts[name].split()) for name in names)
    print(f"{seconds:.1f} s, {len(utterances)} utterances ending at {[u['end'] for u in utterances]}, "
          f"{len(words)} words of {expected}")
    assert len(utterances) == int(np.ceil(seconds / (4096 * 0.03))), utterances
    assert len(words) >= 0.97 * expected
    assert words[-1] == texts[names[-1]].split()[-1]
    assert utterances[-1]["words"][-1]["end"] > seconds - 1


@pytest.mark.skipif(shutil.which("sox") is None, reason="sox is not installed")
@pytest.mark.parametrize("encoding", ["u-law", "a-law"])
def test_telephone_audio_is_transcribed_as_well_as_linear_pcm(tarn, tmp_path, encoding):
    """G.711 WAV (8-bit mu-law and A-law, telephone audio) was refused,
    though libsndfile decodes it. Over the samples, its word errors against
    their transcripts are at most one more than the 16-bit originals'."""
    rows = (ASR / "samples" / "transcripts.tsv").read_text().splitlines()[1:]
    errors = {"pcm": 0, encoding: 0}
    for name, text in (row.split("\t") for row in rows):
        coded = tmp_path / name
        subprocess.run(["sox", str(ASR / "samples" / name), "-e", encoding, str(coded)], check=True)
        for kind, path in (("pcm", ASR / "samples" / name), (encoding, coded)):
            errors[kind] += edit_distance(transcribe(tarn, path)[-1]["text"].split(), text.split())
    print(errors)
    assert errors[encoding] <= errors["pcm"] + 1, errors


# The candidates tarn adapt tries by default (DefaultWarpCandidates), as the
# float32 values the front end holds.
WARPS = [float(np.float32(w)) for w in (0.85, 0.9, 0.95, 1.0, 1.05, 1.1, 1.15)]


def pytorch_log_probs(model, recipe, samples, warp):
    frames = features.features(samples, recipe, warp=warp).astype(np.float32)
    with torch.no_grad():
        return torch.log_softmax(model(torch.from_numpy(frames)[None])[0].double(), -1).numpy()


def test_adapt_scores_match_pytorch(trained, tarn):
    """`tarn adapt` (EstimateWarp) over the bundled samples: each candidate's
    score, the mean over every step of the log-probability of its most
    likely label, against the PyTorch model over features.py's warped
    features; and the warp it picks is the best of PyTorch's scores."""
    model, recipe = trained
    r = subprocess.run([tarn, "adapt", str(ASR / "model" / "asr.tarn"), *map(str, WAVS), "--json"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    expected = []
    for warp in WARPS:
        best = np.concatenate([pytorch_log_probs(model, recipe, features.read_wav(str(w)), warp).max(-1) for w in WAVS])
        expected.append(best.mean())
    scores = [s["score"] for s in got["scores"]]
    print("warp   tarn adapt   PyTorch")
    for warp, s, e in zip(WARPS, scores, expected):
        print(f"{warp:.2f}  {s:.6f}  {e:.6f}")
    assert [s["warp"] for s in got["scores"]] == pytest.approx(WARPS)
    assert scores == pytest.approx(expected, abs=1e-4)
    assert len(set(np.round(expected, 3))) > 1, "the warp changes nothing: the test shows nothing"
    order = np.argsort(expected)
    assert expected[order[-1]] - expected[order[-2]] > 2e-4, "too close to call"
    assert got["warp"] == pytest.approx(WARPS[order[-1]])


def test_transcribe_with_a_warp_is_pytorch_greedy_on_warped_features(trained, tarn):
    """`tarn transcribe --warp` (the Recognizer's front end warped), greedy,
    with no endpoint and no final silence, against greedy decoding of the
    PyTorch model's logits over features.py's warped features."""
    model, recipe = trained
    labels = torch.load(ASR / "model" / "asr.pt", map_location="cpu", weights_only=False)["labels"]
    changed = 0
    for wav in WAVS:
        samples = features.read_wav(str(wav))
        texts = {}
        for warp in (0.85, 1.15):
            path = pytorch_log_probs(model, recipe, samples, float(np.float32(warp))).argmax(-1)
            merged = [label for i, label in enumerate(path) if label != 0 and (i == 0 or label != path[i - 1])]
            expected = " ".join("".join(labels[label] for label in merged).split())
            got = transcribe(tarn, wav, "--warp", str(warp), "--endpoint-ms", "0", "--final-silence-ms", "0")[-1]
            print(f"{wav.name} warp {warp}: {got['text']!r}")
            assert got["text"] == expected, (wav.name, warp)
            texts[warp] = expected
        changed += texts[0.85] != texts[1.15]
    assert changed, "no sample reads differently at the two warps: the test shows nothing"


def run_adapt_py(*args):
    return subprocess.run([sys.executable, str(ASR / "adapt.py"), *map(str, args)], capture_output=True, text=True)


@pytest.fixture(scope="module")
def adapted(tmp_path_factory):
    """adapt.py over the bundled samples (warp 0.9, 2 passes, f32): the
    model's path and adapt.py's mean entropies before and after."""
    target = tmp_path_factory.mktemp("adapted") / "adapted.tarn"
    r = run_adapt_py(target, *WAVS, "--warp", "0.9", "--passes", "2", "--dtype", "f32")
    assert r.returncode == 0, r.stderr
    print(r.stdout.strip())
    before, after = map(float, r.stdout.split("mean entropy ")[1].split(" nats")[0].split(" -> "))
    return target, before, after


def test_adapt_py_writes_a_model_tarn_finds_more_certain(adapted, tarn, tmp_path):
    """tarn's logits under the model adapt.py wrote, over the features it
    adapted on (warped, each file followed by the final silence), have the
    mean entropy adapt.py reports after adapting, and that is lower than
    the one it reports before: the file holds the adapted weights."""
    target, before, after = adapted
    recipe = torch.load(ASR / "model" / "asr.pt", map_location="cpu", weights_only=False)["recipe"]
    silence = np.zeros(int(0.3 * recipe["sample_rate"]), np.float32)
    entropies = []
    for wav in WAVS:
        samples = np.concatenate([features.read_wav(str(wav)), silence])
        np.save(tmp_path / "frames.npy", features.features(samples, recipe, warp=0.9).astype(np.float32))
        r = subprocess.run([tarn, "run", str(target), "--input", str(tmp_path / "frames.npy"),
                            "--output", str(tmp_path / "logits.npy")], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        log_p = torch.log_softmax(torch.from_numpy(np.load(tmp_path / "logits.npy")).double(), -1)
        entropies.append(-(log_p.exp() * log_p).sum(-1).mean().item())
    print(f"tarn: mean entropy {np.mean(entropies):.5f}")
    assert np.mean(entropies) == pytest.approx(after, abs=1e-4)
    assert after < before - 1e-3


def test_a_speakers_model_keeps_its_warp(adapted, tarn):
    """The model adapt.py wrote stores its warp (schema 1.5): `tarn info`
    shows it, and `tarn transcribe` without --warp reads every sample as
    with --warp 0.9, where --warp 1 reads some differently."""
    target = adapted[0]
    info = subprocess.run([tarn, "info", str(target)], capture_output=True, text=True, check=True).stdout
    assert "a speaker's warp 0.9" in info
    changed = 0
    for wav in WAVS:
        stored = transcribe(tarn, wav, model=target)
        assert stored == transcribe(tarn, wav, "--warp", "0.9", model=target), wav.name
        changed += stored != transcribe(tarn, wav, "--warp", "1", model=target)
    assert changed, "no sample reads differently unwarped: the test shows nothing"


def test_a_stored_warp_out_of_range_is_refused(adapted, tarn, tmp_path):
    """A file whose stored warp is 3 (written past the converter, which
    refuses it, and stamped with its file checksum) loads, but no recognizer
    starts on it: the error names the warp."""
    data = adapted[0].read_bytes()
    stored = np.float32(0.9).tobytes()
    assert data.count(stored) == 1, "the warp's bytes are not unique in the file"
    bad = tmp_path / "bad.tarn"
    bad.write_bytes(stamped(data.replace(stored, np.float32(3.0).tobytes())))
    r = subprocess.run([tarn, "transcribe", str(bad), str(WAVS[0])], capture_output=True, text=True)
    assert r.returncode != 0 and "warp 3 is outside [0.5, 2]" in r.stderr, r.stderr


def test_adapt_py_changes_only_the_layer_norms():
    sys.path.insert(0, str(ASR))
    import adapt

    checkpoint = torch.load(ASR / "model" / "asr.pt", map_location="cpu", weights_only=False)
    adapted, _, _ = adapt.adapt(checkpoint, [features.read_wav(str(WAVS[0]))], passes=1)
    changed = {name for name, t in adapted["state_dict"].items() if not torch.equal(t, checkpoint["state_dict"][name])}
    norms = {name for name in checkpoint["state_dict"] if name.startswith("norm.") or ".norm" in name}
    assert changed == norms


def test_adapt_py_refuses_bad_input(tmp_path):
    low_rate = tmp_path / "8k.wav"
    with wave.open(str(low_rate), "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(8000), w.writeframes(b"\0\0" * 800)
    truncated = tmp_path / "truncated.wav"
    truncated.write_bytes(WAVS[0].read_bytes()[:30])
    for args, named in (([low_rate], "8k.wav: need 16000 Hz"), ([truncated], "truncated.wav"),
                        ([WAVS[0], "--warp", "3"], "--warp 3.0: need 0.5-2"),
                        ([tmp_path / "missing.wav"], "missing.wav")):
        r = run_adapt_py(tmp_path / "out.tarn", *args)
        assert r.returncode == 2 and named in r.stderr, (args, r.stderr)
        assert not (tmp_path / "out.tarn").exists()
