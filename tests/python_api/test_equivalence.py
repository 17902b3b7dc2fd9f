"""Python ≡ C++ bit for bit: the package's outputs against the `tarn` CLI's
on the same models and inputs."""

import json
import re
import struct
import subprocess
import wave

import numpy as np
import pytest

import tarn
from conftest import SAMPLES, SPEECH_MODEL, _random_model, cli_outputs, run_cli
from tarn._api import round3


def _tokens(n, vocab, seed=0):
    return np.random.default_rng(seed).integers(0, vocab, n).astype(np.int64)


def _frames(n, width, seed=0):
    return np.random.default_rng(seed).standard_normal((n, width)).astype(np.float32)


def test_step_tokens_match_cli(models, tarn_bin, tmp_path):
    model = tarn.Model(models["tokens"])
    tokens = _tokens(40, model.config.vocab_size)
    expected = cli_outputs(tarn_bin, models["tokens"], tokens, tmp_path)
    session = model.session()
    got = np.stack([session.step_token(int(t)).copy() for t in tokens])
    assert got.dtype == np.float32 and got.shape == expected.shape
    assert np.array_equal(got.view(np.uint32), expected.view(np.uint32))
    assert session.position == len(tokens)


def test_step_frames_match_cli(models, tarn_bin, tmp_path):
    model = tarn.Model(models["frames"])
    frames = _frames(25, model.frame_size)
    expected = cli_outputs(tarn_bin, models["frames"], frames, tmp_path)
    session = model.session()
    got = [out.copy() for out in (session.step_frame(f) for f in frames) if out is not None]
    assert np.array_equal(np.stack(got).view(np.uint32), expected.view(np.uint32))


@pytest.mark.parametrize("kind", ["tokens", "frames"])
def test_prefill_matches_cli_outputs_and_state(kind, models, tarn_bin, tmp_path):
    model = tarn.Model(models[kind])
    inputs = _tokens(70, model.config.vocab_size) if kind == "tokens" else _frames(70, model.frame_size)
    prefill = 50
    expected = cli_outputs(tarn_bin, models[kind], inputs, tmp_path, "--prefill", prefill, "--state-dir", tmp_path)
    session = model.session()
    head = session.prefill(inputs[:prefill], outputs=True)
    rest = [session.step_token(int(t)).copy() for t in inputs[prefill:]] if kind == "tokens" else [
        o.copy() for o in (session.step_frame(f) for f in inputs[prefill:]) if o is not None
    ]
    got = np.concatenate([head, np.stack(rest)])
    assert np.array_equal(got.view(np.uint32), expected.view(np.uint32))
    c = model.config
    S = np.stack([session.attention_state(layer)[0] for layer in range(c.num_layers)])
    z = np.stack([session.attention_state(layer)[1] for layer in range(c.num_layers)])
    assert np.array_equal(S.view(np.uint32), np.load(tmp_path / "state_S.npy").view(np.uint32))
    assert np.array_equal(z.view(np.uint32), np.load(tmp_path / "state_z.npy").view(np.uint32))


def test_prefill_state_snapshot_equals_stepping(models):
    model = tarn.Model(models["tokens"])
    tokens = _tokens(100, model.config.vocab_size, seed=4)
    prefilled, stepped = model.session(), model.session()
    prefilled.prefill(tokens)
    for t in tokens:
        stepped.step_token(int(t))
    snapshot = prefilled.snapshot()
    assert len(snapshot) == model.snapshot_bytes
    assert snapshot == stepped.snapshot()


def test_schema_version_is_the_files(models):
    from converter.reader import read_tarn

    for path in (models["tokens"], SPEECH_MODEL):
        assert tarn.Model(path).schema_version == read_tarn(path).schema_version


def test_snapshot_restore_clone_continue_bit_identically(models):
    model = tarn.Model(models["tokens"])
    tokens = _tokens(60, model.config.vocab_size, seed=5)
    a = model.session()
    for t in tokens[:30]:
        a.step_token(int(t))
    state = a.snapshot()
    b = model.session()
    b.restore(state)
    c = a.clone()
    assert b.position == c.position == 30
    for t in tokens[30:]:
        ya, yb, yc = a.step_token(int(t)), b.step_token(int(t)), c.step_token(int(t))
        assert np.array_equal(ya.view(np.uint32), yb.view(np.uint32))
        assert np.array_equal(ya.view(np.uint32), yc.view(np.uint32))
    a.reset()
    assert a.position == 0 and a.snapshot() == model.session().snapshot()


def test_batch_matches_cli(models, tarn_bin, tmp_path):
    model = tarn.Model(models["tokens"])
    streams = [_tokens(20, model.config.vocab_size, seed=s) for s in range(3)]
    expected = [cli_outputs(tarn_bin, models["tokens"], s, tmp_path) for s in streams]
    sessions = [model.session() for _ in streams]
    batch = tarn.SessionBatch(model, max_streams=4)
    for t in range(20):
        out = batch.step_tokens(sessions, [int(s[t]) for s in streams])
        for i in range(3):
            assert np.array_equal(out[i].view(np.uint32), expected[i][t].view(np.uint32))


def test_batch_frames_match_single_sessions(models):
    model = tarn.Model(models["frames"])
    streams = [_frames(9, model.frame_size, seed=s) for s in range(2)]
    batched = [model.session() for _ in streams]
    single = [model.session() for _ in streams]
    batch = tarn.SessionBatch(model)
    for t in range(9):
        out, stepped = batch.step_frames(batched, np.stack([s[t] for s in streams]))
        for i in range(2):
            alone = single[i].step_frame(streams[i][t])
            assert stepped[i] == (alone is not None)
            if alone is not None:
                assert np.array_equal(out[i].view(np.uint32), alone.view(np.uint32))


def test_encode_matches_cli(models, tarn_bin, tmp_path):
    model = tarn.Model(models["bidirectional"])
    tokens = _tokens(33, model.config.vocab_size, seed=6)
    expected = cli_outputs(tarn_bin, models["bidirectional"], tokens, tmp_path, "encode")
    got = model.session().encode(tokens)
    assert np.array_equal(got.view(np.uint32), expected.view(np.uint32))


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.stem)
def test_transcribe_matches_cli(sample, tarn_bin):
    expected = json.loads(run_cli(tarn_bin, "transcribe", "-q", "--json", SPEECH_MODEL, sample))
    model = tarn.Model(SPEECH_MODEL)
    result = tarn.transcribe(model, sample)
    assert result.text == expected["text"]
    assert [(w.word, round3(w.start), round3(w.end)) for w in result.words] == [
        (w["word"], w["start"], w["end"]) for w in expected["words"]
    ]
    assert round3(result.duration) == expected["duration"]


def _pcm_wav(bits, container, payload):
    """A mono 16 kHz integer PCM WAV file of `bits`-bit samples in containers
    of `container` bytes (block_align)."""
    fmt = struct.pack("<HHIIHH", 1, 1, 16000, 16000 * container, container, bits)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(payload)) + payload
    return b"RIFF" + struct.pack("<I", len(body)) + body


def _container_variants(sample, tmp_path):
    """The sample's 16-bit PCM (read by the wave module) as WAV files whose
    bits are not their containers' (12 in 16, 20 in 24, 24 in 32 as ALSA's
    arecord writes them), each with the samples it holds as floats."""
    with wave.open(str(sample), "rb") as w:
        pcm = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.int64)
    twelve = pcm & ~0xF
    twenty = pcm << 8 | 0xA0  # bits below the 16, left-justified as 20 bits
    twenty_four = pcm << 16 | 0x5500
    as_bytes = lambda values, width: np.stack([(values >> (8 * i)) & 0xFF for i in range(width)], 1).astype(np.uint8)
    cases = {
        "12_in_16": (_pcm_wav(12, 2, as_bytes(twelve, 2).tobytes()), twelve / 2**15),
        "20_in_24": (_pcm_wav(20, 3, as_bytes(twenty, 3).tobytes()), twenty / 2**23),
        "24_in_32": (_pcm_wav(24, 4, as_bytes(twenty_four, 4).tobytes()), twenty_four / 2**31),
    }
    out = {}
    for name, (data, samples) in cases.items():
        out[name] = (tmp_path / f"{name}.wav", samples.astype(np.float32))
        out[name][0].write_bytes(data)
    return out


def _wav_variants(sample, tmp_path):
    """The sample as WAV files the wave module could not read, each as a
    recorder or a tool writes it: 32-bit float (sox), 4 channels (sox writes
    the extensible header), 24-bit in the extensible header, a data size
    left as a streaming writer's placeholder (~0), samples narrower than
    their containers (_container_variants), and a block_align that is not
    the samples' (0 and 4 for 16-bit mono)."""
    import subprocess

    out = {name: path for name, (path, _) in _container_variants(sample, tmp_path).items()}
    for name, args in (("float", ["-e", "floating-point", "-b", "32"]), ("four_channels", ["-c", "4"]),
                       ("24bit_extensible", ["-b", "24", "-c", "3"])):
        out[name] = tmp_path / f"{name}.wav"
        subprocess.run(["sox", str(sample), *args, str(out[name])], check=True)
    data = bytearray(sample.read_bytes())
    at = data.index(b"data")
    data[at + 4 : at + 8] = b"\xff\xff\xff\xff"
    data[4:8] = b"\xff\xff\xff\xff"
    out["streamed"] = tmp_path / "streamed.wav"
    out["streamed"].write_bytes(bytes(data))
    # The extensible header's 24-bit samples with block_align 4 a channel:
    # libsndfile reads 3-byte containers there (ALSA's 4 only in a plain
    # PCM header).
    data = bytearray(out["24bit_extensible"].read_bytes())
    fmt = data.index(b"fmt ") + 8
    data[fmt + 12 : fmt + 14] = (4 * 3).to_bytes(2, "little")
    out["24bit_extensible_align_4"] = tmp_path / "24bit_extensible_align_4.wav"
    out["24bit_extensible_align_4"].write_bytes(bytes(data))
    # block_align 0 and 4 for 16-bit mono: libsndfile sizes samples by their
    # bits and reads both as the sample.
    fmt = sample.read_bytes().index(b"fmt ") + 8
    for align in (0, 4):
        data = bytearray(sample.read_bytes())
        data[fmt + 12 : fmt + 14] = align.to_bytes(2, "little")
        out[f"block_align_{align}"] = tmp_path / f"block_align_{align}.wav"
        out[f"block_align_{align}"].write_bytes(bytes(data))
    return out


def test_wav_files_the_cli_reads_are_read_alike(tarn_bin, tmp_path):
    model = tarn.Model(SPEECH_MODEL)
    for name, path in _wav_variants(SAMPLES[0], tmp_path).items():
        expected = json.loads(run_cli(tarn_bin, "transcribe", "-q", "--json", SPEECH_MODEL, path))
        result = tarn.transcribe(model, path)
        assert result.text == expected["text"], name
        assert [(w.word, round3(w.start), round3(w.end)) for w in result.words] == [
            (w["word"], w["start"], w["end"]) for w in expected["words"]
        ], name
        assert round3(result.duration) == expected["duration"], name
    assert np.array_equal(tarn.read_wav(tmp_path / "streamed.wav"), tarn.read_wav(SAMPLES[0]))
    for name, (path, samples) in _container_variants(SAMPLES[0], tmp_path).items():
        assert np.array_equal(tarn.read_wav(path), samples), name
    # A data chunk that declares 0 bytes, audio after it: refused by both.
    data = bytearray(SAMPLES[0].read_bytes())
    at = data.index(b"data")
    data[at + 4 : at + 8] = bytes(4)
    (tmp_path / "zero.wav").write_bytes(bytes(data))
    with pytest.raises(tarn.InvalidArgumentError, match="declares 0 bytes of audio but"):
        tarn.read_wav(tmp_path / "zero.wav")
    cli = subprocess.run([str(tarn_bin), "transcribe", "-q", str(SPEECH_MODEL), str(tmp_path / "zero.wav")],
                         capture_output=True, text=True)
    assert cli.returncode == 1 and "declares 0 bytes of audio but" in cli.stderr


def test_transcribe_with_words_matches_cli(tarn_bin):
    words_file = SPEECH_MODEL.parents[1] / "words.txt"
    sample = SAMPLES[0]
    expected = json.loads(run_cli(tarn_bin, "transcribe", "-q", "--json", "--words", words_file, SPEECH_MODEL, sample))
    words = [w.strip() for w in words_file.read_text().splitlines() if w.strip()]
    result = tarn.transcribe(tarn.Model(SPEECH_MODEL), sample, words=words)
    assert result.text == expected["text"]
    assert [(w.word, round3(w.start), round3(w.end)) for w in result.words] == [
        (w["word"], w["start"], w["end"]) for w in expected["words"]
    ]


def test_warp_estimator_streams_what_estimate_warp_gives():
    """tarn.WarpEstimator fed int16 PCM in pieces, estimating along the way,
    gives estimate_warp's warp and scores over the same samples as floats,
    the unfinished utterance included."""
    model = tarn.Model(SPEECH_MODEL)
    pcm = [np.round(tarn.read_wav(p) * 32768).astype(np.int16) for p in SAMPLES[:3]]
    floats = [p.astype(np.float32) / np.float32(32768) for p in pcm]
    estimator = tarn.WarpEstimator(model)
    for i, utterance in enumerate(pcm):
        for at in range(0, len(utterance), 4000):
            estimator.accept(utterance[at : at + 4000])
        if i == 2:
            # Mid-stream: the last utterance unfinished, as it stands.
            assert estimator.estimate() == tarn.estimate_warp(model, floats)
        estimator.end_utterance()
    assert estimator.estimate() == tarn.estimate_warp(model, floats)


def test_warp_and_its_estimate_match_cli(tarn_bin):
    """tarn.estimate_warp is `tarn adapt` (warp and every score), and
    transcribe(warp=...) is `tarn transcribe --warp`."""
    model = tarn.Model(SPEECH_MODEL)
    expected = json.loads(run_cli(tarn_bin, "adapt", "--json", SPEECH_MODEL, *SAMPLES))
    warp, scores = tarn.estimate_warp(model, SAMPLES)
    assert warp == pytest.approx(expected["warp"])
    assert list(scores.values()) == pytest.approx([s["score"] for s in expected["scores"]], abs=1e-12)
    assert tarn.estimate_warp(model, [tarn.read_wav(p) for p in SAMPLES]) == (warp, scores)
    for sample in SAMPLES:
        expected = json.loads(run_cli(tarn_bin, "transcribe", "-q", "--json", "--warp", "0.85", SPEECH_MODEL, sample))
        assert tarn.transcribe(model, sample, warp=0.85).text == expected["text"]
        recognizer = tarn.Recognizer(model)
        recognizer.set_warp(0.85)  # before any audio: as if created with it
        recognizer.accept(tarn.read_wav(sample))
        assert " ".join([r.text for r in recognizer.pop_results()] + [recognizer.final_result().text]).split() == \
            expected["text"].split()


def test_recognizer_any_chunk_size_and_dtype():
    model = tarn.Model(SPEECH_MODEL)
    samples = tarn.read_wav(SAMPLES[1])
    reference = tarn.transcribe(model, samples)
    pcm = np.round(samples * 32768).astype(np.int16)  # the file is 16-bit PCM: exact
    for chunk in (1, 333, 16000, len(pcm)):
        recognizer = tarn.Recognizer(model)
        texts = []
        for begin in range(0, len(pcm), chunk):
            recognizer.accept(pcm[begin : begin + chunk])
            texts += [r.text for r in recognizer.pop_results()]
            recognizer.partial_result()
        texts.append(recognizer.final_result().text)
        assert " ".join(t for t in texts if t) == reference.text


@pytest.mark.parametrize("final_silence_ms", [0, 300])
def test_final_silence_matches_cli(tarn_bin, tmp_path, final_silence_ms):
    """A sample cut where its speech ends, so that the final silence decides
    whether its last word arrives: the package and the CLI agree either way."""
    samples = tarn.read_wav(SAMPLES[0])
    loud = np.flatnonzero(np.abs(samples) > 0.01 * np.abs(samples).max())
    pcm = np.round(samples[: loud[-1] + 1] * 32768).astype(np.int16)
    cut = tmp_path / "cut.wav"
    with wave.open(str(cut), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16000)
        out.writeframes(pcm.astype("<i2").tobytes())
    expected = json.loads(
        run_cli(tarn_bin, "transcribe", "-q", "--json", "--final-silence-ms", final_silence_ms, SPEECH_MODEL, cut)
    )
    result = tarn.transcribe(tarn.Model(SPEECH_MODEL), pcm, final_silence_ms=final_silence_ms)
    assert result.text == expected["text"]
    assert [(w.word, round3(w.start), round3(w.end)) for w in result.words] == [
        (w["word"], w["start"], w["end"]) for w in expected["words"]
    ]


def test_transcribe_array_equals_file():
    model = tarn.Model(SPEECH_MODEL)
    from_file = tarn.transcribe(model, SAMPLES[2])
    from_array = tarn.transcribe(model, tarn.read_wav(SAMPLES[2]))
    assert from_file == from_array


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16", "i8"])
def test_weight_bytes_by_dtype_match_the_file(tmp_path, dtype):
    from tests.goldens import stored_bytes_by_dtype

    common = dict(d_model=32, num_layers=2, num_heads=2, d_key=16, d_value=16, d_ff=64)
    path = _random_model(tmp_path / f"{dtype}.tarn", 4, dtype=dtype, vocab_size=50, output_dim=50, **common)
    model = tarn.Model(path)
    stored = stored_bytes_by_dtype(path)
    assert model.weight_bytes_by_dtype == stored
    assert sum(stored.values()) == model.weight_bytes
    assert max(stored, key=stored.get) == dtype


def test_int8_dot_matches_cli(models, tarn_bin, tmp_path):
    """Model(int8="dot") steps as `tarn run --int8 dot`, and transcribes as
    `tarn transcribe --int8 dot`; "exact" (the default) steps otherwise."""
    path = _random_model(tmp_path / "i8.tarn", seed=5, dtype="i8", d_model=32, num_layers=2, num_heads=2,
                         d_key=16, d_value=16, d_ff=64, vocab_size=50)
    tokens = np.arange(12, dtype=np.int32) % 50
    outputs = {}
    for int8 in ("exact", "dot"):
        session = tarn.Model(path, int8=int8).session()
        outputs[int8] = np.stack([session.step_token(int(t)) for t in tokens])
        expected = cli_outputs(tarn_bin, path, tokens, tmp_path, "--int8", int8)
        np.testing.assert_array_equal(outputs[int8], expected)
    assert not np.array_equal(outputs["exact"], outputs["dot"])

    sample = SAMPLES[0]
    expected = json.loads(run_cli(tarn_bin, "transcribe", "-q", "--json", "--int8", "dot", SPEECH_MODEL, sample))
    assert tarn.transcribe(tarn.Model(SPEECH_MODEL, int8="dot"), sample).text == expected["text"]


def test_model_audio_is_the_training_recipe(models):
    """Model.audio of the bundled speech model is the feature recipe its
    checkpoint (asr.pt, read by PyTorch) was trained with, as float32, and
    no speaker's warp; a token model has none."""
    torch = pytest.importorskip("torch")
    recipe = torch.load(SPEECH_MODEL.with_suffix(".pt"), map_location="cpu", weights_only=False)["recipe"]
    audio = tarn.Model(SPEECH_MODEL).audio
    assert set(audio) == set(recipe) | {"warp"}
    for key, value in recipe.items():
        if isinstance(value, str):
            assert audio[key] == value, key
        else:
            np.testing.assert_array_equal(np.float32(audio[key]), np.float32(value), err_msg=key)
    assert audio["warp"] == 1.0
    assert tarn.Model(models["tokens"]).audio is None


@pytest.mark.parametrize("dtype", [np.int16, np.float32])
def test_samples_in_the_other_byte_order_are_the_same_samples(dtype):
    """Samples in the other byte order (np.frombuffer(data, ">i2")) are taken
    as the session APIs take them: results equal the machine order's."""
    model = tarn.Model(SPEECH_MODEL)
    samples = tarn.read_wav(SAMPLES[1])
    native = np.round(samples * 32768).astype(np.int16) if dtype == np.int16 else samples
    swapped = native.astype(native.dtype.newbyteorder("S"))
    assert tarn.transcribe(model, swapped) == tarn.transcribe(model, native)
    results = []
    for array in (native, swapped):
        recognizer = tarn.Recognizer(model)
        recognizer.accept(array)
        results.append((recognizer.pop_results(), recognizer.final_result()))
    assert results[0] == results[1]
    estimators = [tarn.WarpEstimator(model) for _ in range(2)]
    estimators[0].accept(native)
    estimators[1].accept(swapped)
    assert estimators[0].estimate() == estimators[1].estimate()


def test_batch_frame_rows_of_sessions_that_did_not_step_are_nan(models):
    """step_frames without `out`: the row of a session that did not step is
    NaN, not whatever memory the array was given."""
    model = tarn.Model(models["frames"])
    frames = _frames(3, model.frame_size, seed=7)
    ahead, behind, alone = model.session(), model.session(), model.session()
    for frame in frames[:2]:  # a step takes stack_window (3) frames
        ahead.step_frame(frame)
        alone.step_frame(frame)
    out, stepped = tarn.SessionBatch(model).step_frames([ahead, behind], np.stack([frames[2], frames[0]]))
    assert list(stepped) == [True, False]
    assert np.array_equal(out[0].view(np.uint32), alone.step_frame(frames[2]).view(np.uint32))
    assert np.isnan(out[1]).all()


def test_lists_of_samples_are_samples():
    """Lists of numbers are float32 samples, as _array takes frames (an
    empty list: none), in every API that takes audio."""
    model = tarn.Model(SPEECH_MODEL)
    samples = tarn.read_wav(SAMPLES[1])
    assert tarn.transcribe(model, samples.tolist()) == tarn.transcribe(model, samples)
    assert tarn.transcribe(model, []).text == ""
    results = []
    for given in (samples.tolist(), samples):
        recognizer = tarn.Recognizer(model)
        recognizer.accept([])
        recognizer.accept(given)
        results.append((recognizer.stats()["samples"], recognizer.pop_results(), recognizer.final_result()))
    assert results[0] == results[1] and results[0][0] == len(samples)
    estimators = [tarn.WarpEstimator(model) for _ in range(2)]
    estimators[0].accept(samples.tolist())
    estimators[1].accept(samples)
    assert estimators[0].estimate() == estimators[1].estimate()
    # int16 given another way than an ndarray is still int16 PCM, scaled by
    # accept, not float samples of +-32767.
    import array

    pcm = np.round(samples * 32767).astype(np.int16)
    for given in (array.array("h", pcm.tobytes()), memoryview(pcm), list(pcm)):
        assert tarn.transcribe(model, given) == tarn.transcribe(model, pcm), type(given)


def test_recognizer_transcribe_is_transcribe_on_a_recognizer_reused():
    """Recognizer.transcribe resets the recognizer and runs transcribe's
    loop: on one recognizer, file after file, the results of transcribe;
    the warp set_warp set is kept by the reset (Recognizer.reset)."""
    model = tarn.Model(SPEECH_MODEL)
    recognizer = tarn.Recognizer(model)
    recognizer.accept(tarn.read_wav(SAMPLES[0])[:5000])  # audio of another file, left over
    for sample in SAMPLES[:3]:
        assert recognizer.transcribe(sample) == tarn.transcribe(model, sample)
        samples = tarn.read_wav(sample)
        assert recognizer.transcribe(samples, chunk_ms=30) == tarn.transcribe(model, samples, chunk_ms=30)
    recognizer.set_warp(0.7)
    for sample in SAMPLES[:2]:
        warped = tarn.transcribe(model, sample, warp=0.7)
        assert warped != tarn.transcribe(model, sample)
        assert recognizer.transcribe(sample) == warped


def test_a_refused_chunk_is_named_as_the_cli_names_it(tarn_bin, tmp_path):
    """A NaN in a file: transcribe names the file and where the refused
    chunk began, as `tarn transcribe` does, not only the sample's place in
    the call; samples given as an array are "the samples", or `name`."""
    samples = np.zeros(16000, "<f4")
    samples[8200] = np.nan
    path = tmp_path / "a.wav"
    fmt = struct.pack("<HHIIHH", 3, 1, 16000, 64000, 4, 32)
    body = b"WAVE" + b"fmt " + struct.pack("<I", 16) + fmt + b"data" + struct.pack("<I", samples.nbytes) + samples.tobytes()
    path.write_bytes(b"RIFF" + struct.pack("<I", len(body)) + body)
    cli = subprocess.run([str(tarn_bin), "transcribe", "-q", str(SPEECH_MODEL), str(path)], capture_output=True, text=True)
    assert cli.returncode == 1
    model = tarn.Model(SPEECH_MODEL)
    with pytest.raises(tarn.InvalidArgumentError) as e:
        tarn.transcribe(model, path)
    assert f"{path}, the chunk from sample 8000 (0.500 s): " in str(e.value)
    assert "sample 200 of this call is nan" in str(e.value)
    assert str(e.value) in cli.stderr
    with pytest.raises(tarn.InvalidArgumentError, match=r"^the samples, the chunk from sample 8000 \(0.500 s\): .*nan"):
        tarn.transcribe(model, samples.astype(np.float32))
    with pytest.raises(tarn.InvalidArgumentError, match=r"^s3://b/a.wav, the chunk from sample 8000 \(0.500 s\): "):
        tarn.Recognizer(model).transcribe(samples.astype(np.float32), name="s3://b/a.wav")


def _wav(chunks):
    """A WAV file of the given RIFF chunks ((id, body) pairs)."""
    body = b"WAVE" + b"".join(k + struct.pack("<I", len(b)) + b + b"\0" * (len(b) & 1) for k, b in chunks)
    return b"RIFF" + struct.pack("<I", len(body)) + body


def test_wav_files_the_cli_refuses_are_refused(tarn_bin, tmp_path):
    """What libsndfile (`tarn transcribe`) refuses, decode_wav refuses, saying
    why: two fmt chunks before the data, two data chunks, more than 1024
    channels; RF64,
    which libsndfile reads, decode_wav says it does not."""
    pcm = np.zeros(1600, "<i2").tobytes()
    fmt = lambda channels: struct.pack("<HHIIHH", 1, channels, 16000, 32000 * channels, 2 * channels, 16)
    files = {
        "two_fmt": (_wav([(b"fmt ", fmt(1)), (b"fmt ", fmt(1)), (b"data", pcm)]), "it has two fmt chunks"),
        "channels": (_wav([(b"fmt ", fmt(1025)), (b"data", np.zeros(1025 * 10, "<i2").tobytes())]),
                     "it has 1025 channels, more than the 1024"),
        # decode_wav read the first and dropped the second's audio.
        "two_data": (_wav([(b"fmt ", fmt(1)), (b"data", pcm), (b"LIST", b"INFO"), (b"data", pcm)]),
                     "it has two data chunks"),
    }
    for name, (data, message) in files.items():
        path = tmp_path / f"{name}.wav"
        path.write_bytes(data)
        with pytest.raises(tarn.InvalidArgumentError, match=f"^{re.escape(str(path))}: cannot read it as audio: {message}"):
            tarn.read_wav(path)
        cli = subprocess.run([str(tarn_bin), "transcribe", "-q", str(SPEECH_MODEL), str(path)], capture_output=True)
        assert cli.returncode == 1, name
    # 1024 channels and a second fmt chunk after the data: both read them.
    for name, data in (("1024", _wav([(b"fmt ", fmt(1024)), (b"data", np.zeros(1024 * 10, "<i2").tobytes())])),
                       ("fmt_after", _wav([(b"fmt ", fmt(1)), (b"data", pcm), (b"fmt ", fmt(1))]))):
        path = tmp_path / f"{name}.wav"
        path.write_bytes(data)
        assert len(tarn.read_wav(path)) == (10 if name == "1024" else 1600), name
        run_cli(tarn_bin, "transcribe", "-q", SPEECH_MODEL, path)
    wav = SAMPLES[0].read_bytes()
    rf64 = b"RF64" + b"\xff" * 4 + wav[8:]
    with pytest.raises(tarn.InvalidArgumentError, match=r"^x.wav: RF64 \(WAV over 4 GB\) is not read by decode_wav"):
        tarn.decode_wav(rf64, name="x.wav")
