"""Every bad input raises tarn.Error (the subclass for its status code)
carrying the runtime's message; nothing crashes the interpreter."""

import os
import threading
from pathlib import Path

import numpy as np
import pytest

import tarn
from conftest import SAMPLES, SPEECH_MODEL


@pytest.fixture
def token_model(models):
    return tarn.Model(models["tokens"])


@pytest.fixture
def frame_model(models):
    return tarn.Model(models["frames"])


def test_token_out_of_range(token_model):
    session = token_model.session()
    with pytest.raises(tarn.InvalidArgumentError, match="token 50") as e:
        session.step_token(50)
    assert isinstance(e.value, tarn.Error)
    with pytest.raises(tarn.Error, match="-1"):
        session.step_token(-1)
    with pytest.raises(tarn.Error, match="32-bit"):
        session.step_token(2**40)
    with pytest.raises(tarn.Error, match="token 77"):
        session.prefill([1, 2, 77])
    assert session.position == 0  # a failed call leaves the session as it was


def test_wrong_dtype(token_model, frame_model):
    with pytest.raises(tarn.InvalidArgumentError, match="float64"):
        frame_model.session().step_frame(np.zeros(frame_model.frame_size))
    with pytest.raises(tarn.InvalidArgumentError, match="int32"):
        token_model.session().prefill(np.zeros(3, np.float32))
    with pytest.raises(tarn.Error, match="token"):
        token_model.session().step_token(1.5)
    with pytest.raises(tarn.InvalidArgumentError, match="int16 or float32"):
        tarn.Recognizer(tarn.Model(SPEECH_MODEL)).accept(np.zeros(10, np.float64))


def test_wrong_shape(token_model, frame_model):
    session = frame_model.session()
    with pytest.raises(tarn.InvalidArgumentError, match="frame") as e:
        session.step_frame(np.zeros(frame_model.frame_size + 1, np.float32))
    assert str(frame_model.frame_size) in str(e.value)
    with pytest.raises(tarn.InvalidArgumentError, match="dimension"):
        session.step_frame(np.zeros((2, frame_model.frame_size), np.float32))
    with pytest.raises(tarn.InvalidArgumentError, match="frames are"):
        session.prefill(np.zeros((4, 3), np.float32))
    with pytest.raises(tarn.InvalidArgumentError, match=r"out has shape \(3,\); it must be \(50,\)"):
        token_model.session().step_token(1, out=np.zeros(3, np.float32))
    with pytest.raises(tarn.InvalidArgumentError, match="mono"):
        tarn.Recognizer(tarn.Model(SPEECH_MODEL)).accept(np.zeros((2, 10), np.int16))


def test_nan_frames(frame_model):
    session = frame_model.session()
    frame = np.zeros(frame_model.frame_size, np.float32)
    frame[2] = np.nan
    with pytest.raises(tarn.InvalidArgumentError, match="(?i)nan"):
        session.step_frame(frame)
    frames = np.zeros((5, frame_model.frame_size), np.float32)
    frames[3, 1] = np.inf
    with pytest.raises(tarn.InvalidArgumentError, match="(?i)inf"):
        session.prefill(frames)
    samples = np.zeros(1600, np.float32)
    samples[100] = np.nan
    with pytest.raises(tarn.InvalidArgumentError, match="sample 100 of this call is nan"):
        tarn.Recognizer(tarn.Model(SPEECH_MODEL)).accept(samples)


def test_closed_model(token_model):
    session = token_model.session()
    with token_model:
        pass
    assert token_model.closed
    for use in (
        lambda: token_model.session(),
        lambda: token_model.parameter_count,
        lambda: token_model.config,
        lambda: tarn.SessionBatch(token_model),
    ):
        with pytest.raises(tarn.InvalidArgumentError, match="closed"):
            use()
    session.step_token(1)  # sessions made before keep their model
    session.prefill([1, 2])
    assert session.clone().position == 3


def test_damaged_files(tmp_path, models):
    with pytest.raises(tarn.IoError, match="No such file"):
        tarn.Model(tmp_path / "missing.tarn")
    data = bytearray(models["tokens"].read_bytes())
    (tmp_path / "truncated.tarn").write_bytes(data[: len(data) // 2])
    with pytest.raises(tarn.InvalidModelError, match="truncated or corrupt"):
        tarn.Model(tmp_path / "truncated.tarn")
    data[-100] ^= 0xFF  # a weight byte: the checksum no longer matches
    (tmp_path / "flipped.tarn").write_bytes(data)
    with pytest.raises(tarn.InvalidModelError, match="checksum"):
        tarn.Model(tmp_path / "flipped.tarn")
    tarn.Model(tmp_path / "flipped.tarn", verify_checksum=False)  # loads, unverified
    with pytest.raises(tarn.InvalidArgumentError, match="int8 is 'fast'"):
        tarn.Model(models["tokens"], int8="fast")
    (tmp_path / "noise.wav").write_bytes(b"RIFF\x00\x01garbage" * 10)
    with pytest.raises(tarn.Error, match="cannot read it as audio"):
        tarn.transcribe(tarn.Model(SPEECH_MODEL), tmp_path / "noise.wav")
    wav = SAMPLES[0].read_bytes()
    (tmp_path / "cut.wav").write_bytes(wav[: len(wav) // 2])
    with pytest.raises(tarn.Error, match="truncated"):
        tarn.transcribe(tarn.Model(SPEECH_MODEL), tmp_path / "cut.wav")


def test_bad_snapshot(token_model, models):
    session = token_model.session()
    snapshot = bytearray(session.snapshot())
    with pytest.raises(tarn.InvalidArgumentError, match=f"snapshot size is {len(snapshot) - 1} bytes"):
        session.restore(bytes(snapshot[:-1]))
    other = tarn.Model(models["bidirectional"]).session()
    with pytest.raises(tarn.InvalidArgumentError, match="snapshot belongs to another model"):
        other.restore(bytes(snapshot))
    with pytest.raises(tarn.InvalidArgumentError, match="a snapshot is bytes, not str"):
        session.restore("not bytes")


def test_wrong_model_kind(token_model, models):
    with pytest.raises(tarn.InvalidArgumentError, match="this model takes tokens, not audio frames"):
        tarn.Recognizer(token_model)
    with pytest.raises(tarn.UnsupportedError, match="attention is causal"):
        token_model.session().encode([1, 2, 3])
    with pytest.raises(tarn.Error, match="beam"):
        tarn.Recognizer(tarn.Model(SPEECH_MODEL), words=["one"], beam=1)


def test_batch_errors(token_model):
    a, b = token_model.session(), token_model.session()
    batch = tarn.SessionBatch(token_model, max_streams=2)
    with pytest.raises(tarn.InvalidArgumentError, match="sessions 0 and 1 are the same"):
        batch.step_tokens([a, a], [1, 2])
    with pytest.raises(tarn.InvalidArgumentError, match="tokens"):
        batch.step_tokens([a, b], [1])
    with pytest.raises(tarn.InvalidArgumentError, match="3 sessions for a batch of at most 2"):
        batch.step_tokens([a, b, token_model.session()], [1, 2, 3])
    with pytest.raises(tarn.InvalidArgumentError, match=r"sessions\[1\] is a NoneType, not a tarn.Session"):
        batch.step_tokens([a, None], [1, 2])
    assert a.position == b.position == 0
    with pytest.raises(tarn.InvalidArgumentError, match="max_prefill_chunk is -1; it must be an int >= 0"):
        token_model.session_bytes(-1)
    assert token_model.session_bytes(0) == 0  # what no session can have


def test_batch_frames_of_the_wrong_shape(frame_model):
    a, b = frame_model.session(), frame_model.session()
    batch = tarn.SessionBatch(frame_model, max_streams=2)
    n = frame_model.frame_size
    # The same number of floats as two frames, in another shape.
    with pytest.raises(tarn.InvalidArgumentError, match=rf"frames are \[2, {n}\].*got shape \({2 * n}, 1\)"):
        batch.step_frames([a, b], np.zeros((2 * n, 1), np.float32))
    assert a.position == b.position == 0
    _, stepped = batch.step_frames([a, b], np.zeros((2, n), np.float32))
    assert stepped.shape == (2,)


def test_one_session_in_two_threads_is_an_error_not_a_crash(models):
    """A step on a session another thread holds in a long prefill raises
    tarn.Error and changes nothing: the session ends as the steps taken
    before the prefill and the prefill leave it."""
    model = tarn.Model(models["tokens"])
    session = model.session()
    tokens = np.arange(200_000, dtype=np.int32) % model.config.vocab_size

    def prefill():
        while True:
            try:
                return session.prefill(tokens)
            except tarn.InvalidArgumentError as e:  # the main thread's step was inside: again
                assert "in use by another thread" in str(e)

    thread = threading.Thread(target=prefill)
    thread.start()
    stepped, error = 0, None
    while error is None and thread.is_alive():
        try:
            session.step_token(1)
            stepped += 1  # the prefill had not begun
        except tarn.Error as e:
            error = e
    thread.join()
    assert isinstance(error, tarn.InvalidArgumentError)
    assert "the session is in use by another thread" in str(error)
    alone = model.session()
    for _ in range(stepped):
        alone.step_token(1)
    alone.prefill(tokens)
    assert session.snapshot() == alone.snapshot()


def test_hotwords():
    model = tarn.Model(SPEECH_MODEL)
    sample = next(s for s in SAMPLES if s.name == "slt_012600.wav")
    assert tarn.transcribe(model, sample, beam=8).text == "the on six is"
    for hotwords, boost in ((["the home"], 2.0), ([("the home", 2.0)], 1.0), ({"the home": None}, 2.0),
                            ({"the home": 2.0}, 1.0)):
        mended = tarn.transcribe(model, sample, hotwords=hotwords, hotword_boost=boost)
        assert mended.text == "the home six is"
    with pytest.raises(tarn.Error, match="beam"):
        tarn.Recognizer(model, hotwords=["light music"], beam=1)
    with pytest.raises(tarn.Error, match="\u00ef"):
        tarn.Recognizer(model, hotwords=["na\u00efve"])
    with pytest.raises(tarn.Error, match="boost"):
        tarn.Recognizer(model, hotwords={"light": -1.0})
    with pytest.raises(tarn.Error, match="list of phrases"):
        tarn.Recognizer(model, hotwords="light music")


def test_warp():
    model = tarn.Model(SPEECH_MODEL)
    with pytest.raises(tarn.InvalidArgumentError, match=r"warp 3 is outside \[0.5, 2\]"):
        tarn.Recognizer(model, warp=3)
    with pytest.raises(tarn.InvalidArgumentError, match="warp 3 is outside"):
        tarn.Recognizer(model).set_warp(3)
    with pytest.raises(tarn.InvalidArgumentError, match="long enough for a model step"):
        tarn.estimate_warp(model, [])
    with pytest.raises(tarn.InvalidArgumentError, match="no candidate warps"):
        tarn.estimate_warp(model, [SAMPLES[0]], candidates=[])
    with pytest.raises(tarn.InvalidArgumentError, match="float64"):
        tarn.estimate_warp(model, [np.zeros(16000)])
    samples = tarn.read_wav(SAMPLES[0])
    samples[5000] = np.nan
    with pytest.raises(tarn.InvalidArgumentError, match="utterance 0"):
        tarn.estimate_warp(model, [samples])


def test_warp_estimator(token_model):
    model = tarn.Model(SPEECH_MODEL)
    estimator = tarn.WarpEstimator(model)
    with pytest.raises(tarn.InvalidArgumentError, match="long enough for a model step"):
        estimator.estimate()
    with pytest.raises(tarn.InvalidArgumentError, match="float32, not float64"):
        estimator.accept(np.zeros(16000))
    with pytest.raises(tarn.InvalidArgumentError, match="mono"):
        estimator.accept(np.zeros((2, 100), np.float32))
    estimator.end_utterance()
    samples = tarn.read_wav(SAMPLES[0])
    samples[5000] = np.nan
    with pytest.raises(tarn.InvalidArgumentError, match="utterance 1: sample 5000 of this call"):
        estimator.accept(samples)
    with pytest.raises(tarn.InvalidArgumentError, match="no candidate warps"):
        tarn.WarpEstimator(model, candidates=[])
    with pytest.raises(tarn.InvalidArgumentError, match="warp 0.1 is outside"):
        tarn.WarpEstimator(model, candidates=[0.1])
    with pytest.raises(tarn.InvalidArgumentError, match="tokens"):
        tarn.WarpEstimator(token_model)


def test_one_batch_in_two_threads_is_an_error_not_wrong_outputs(models):
    """A batch's scratch serves one call at a time: a second thread gets
    tarn.Error, and every call that ran gave the outputs of stepping alone."""
    model = tarn.Model(models["tokens"])
    batch = tarn.SessionBatch(model, max_streams=4)
    outputs, errors = [[], []], []

    def work(k):
        sessions = [model.session() for _ in range(4)]
        tokens = np.arange(4, dtype=np.int32) + 10 * k
        try:
            for _ in range(300):
                outputs[k].append(batch.step_tokens(sessions, tokens).copy())
        except tarn.Error as e:
            errors.append(str(e))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all("session batch is in use by another thread" in e for e in errors)
    for k in range(2):
        alone = [model.session() for _ in range(4)]
        tokens = np.arange(4, dtype=np.int32) + 10 * k
        for got in outputs[k]:
            expected = np.stack([s.step_token(int(t)) for s, t in zip(alone, tokens)])
            assert np.array_equal(got, expected)


def test_out_of_another_shape(token_model):
    session = token_model.session()
    n = token_model.output_size
    with pytest.raises(tarn.InvalidArgumentError, match=r"out has shape \(3, %d\)" % n):
        session.step_token(1, out=np.zeros((3, n), np.float32))
    with pytest.raises(tarn.InvalidArgumentError, match="out has shape"):
        tarn.SessionBatch(token_model, 2).step_tokens([session, token_model.session()], [1, 2], out=np.zeros((n, 2), np.float32))
    assert session.position == 0


def test_word_lists_and_hotwords_of_the_wrong_kind():
    model = tarn.Model(SPEECH_MODEL)
    with pytest.raises(tarn.InvalidArgumentError, match="not one string"):
        tarn.Recognizer(model, words="the on six is")
    with pytest.raises(tarn.InvalidArgumentError, match=r"words\[1\] is a NoneType"):
        tarn.Recognizer(model, words=["six", None])
    with pytest.raises(tarn.InvalidArgumentError, match="empty"):
        tarn.Recognizer(model, words=[])
    with pytest.raises(tarn.InvalidArgumentError, match=r"hotwords\[0\] is \('six',\)"):
        tarn.Recognizer(model, hotwords=[("six",)])
    with pytest.raises(tarn.InvalidArgumentError, match="the boost of 'six' is 'x'"):
        tarn.Recognizer(model, hotwords=[("six", "x")])
    with pytest.raises(tarn.InvalidArgumentError, match=r"hotwords\[0\] is 6"):
        tarn.Recognizer(model, hotwords=[6])


def test_model_paths(models, tmp_path):
    with pytest.raises(tarn.InvalidArgumentError, match="NUL"):
        tarn.Model(str(models["tokens"]) + "\0.bak")
    # A name that is not UTF-8 (legal on Linux) loads as open() reads it.
    odd = tmp_path / os.fsdecode(b"model-\xff.tarn")
    odd.write_bytes(Path(models["tokens"]).read_bytes())
    model = tarn.Model(odd)
    assert model.path == str(odd)
    assert model.session().step_token(1).shape == (model.output_size,)
    assert tarn.Model(os.fsencode(odd)).output_size == model.output_size


def test_arguments_of_the_wrong_kind_are_named(token_model, frame_model):
    for make, what in [(lambda: tarn.Session(None), "Session"), (lambda: tarn.SessionBatch("x"), "SessionBatch"),
                       (lambda: tarn.Recognizer(None), "Recognizer"), (lambda: tarn.WarpEstimator(None), "WarpEstimator")]:
        with pytest.raises(tarn.InvalidArgumentError, match=f"{what}: model is a"):
            make()
    model = tarn.Model(SPEECH_MODEL)
    for option in ("endpoint_ms", "max_utterance_ms", "beam", "threads", "final_silence_ms"):
        with pytest.raises(tarn.InvalidArgumentError, match=f"{option} is -1; it must be an int >= 0"):
            tarn.Recognizer(model, **{option: -1})
    with pytest.raises(tarn.InvalidArgumentError, match="max_prefill_chunk is -2"):
        token_model.session(max_prefill_chunk=-2)
    # The other byte order holds the same values: taken as they are.
    frame = np.arange(frame_model.frame_size, dtype=">f4") / 7
    native = frame.astype(np.float32)
    assert np.array_equal(frame_model.session().step_frame(frame), frame_model.session().step_frame(native))


def test_convert_takes_a_model_config(tmp_path):
    """tarn.convert(state_dict, out, config=ModelConfig(...)): the config as
    the converter's own functions take it (it was read as a file name)."""
    from converter.reference import ModelConfig
    from tests.goldens import build_model

    config = ModelConfig(d_model=16, num_layers=1, num_heads=2, d_key=8, d_value=8, d_ff=32, vocab_size=10, output_dim=10)
    tarn.convert(build_model(config, 0).state_dict(), tmp_path / "m.tarn", config=config)
    assert tarn.Model(tmp_path / "m.tarn").config.d_model == 16


def test_a_name_that_is_not_utf8_is_quoted_in_the_message(tmp_path):
    """The runtime quotes a path as the file system's bytes; the message
    shows the bytes that are not UTF-8 as escapes (it had no message)."""
    for name, content, error in ((b"missing-\xff.tarn", None, tarn.IoError),
                                 (b"damaged-\xe9.tarn", b"x" * 100, tarn.InvalidModelError)):
        path = tmp_path / os.fsdecode(name)
        if content is not None:
            path.write_bytes(content)
        with pytest.raises(error) as e:
            tarn.Model(path)
        assert os.fsencode(path).decode("utf-8", "backslashreplace") in str(e.value)


def test_estimate_warp_refuses_one_file_for_a_list():
    model = tarn.Model(SPEECH_MODEL)
    for utterances in (str(SAMPLES[0]), SAMPLES[0], os.fsencode(SAMPLES[0])):
        with pytest.raises(tarn.InvalidArgumentError, match="give a list of files or arrays"):
            tarn.estimate_warp(model, utterances)


def test_options_of_the_wrong_kind_are_tarn_errors_naming_them(frame_model):
    model = tarn.Model(SPEECH_MODEL)
    samples = np.zeros(1600, np.float32)
    for call, message in [
        (lambda: tarn.transcribe(model, samples, chunk_ms=50.5), "chunk_ms is 50.5"),
        (lambda: tarn.Recognizer(model, warp="1.1x"), "warp is '1.1x'"),
        (lambda: tarn.Recognizer(model).set_warp("1.1"), "warp is '1.1'"),
        (lambda: tarn.Recognizer(model, hotwords=["six"], hotword_boost=None), "hotword_boost is None"),
        (lambda: tarn.Recognizer(model, beam_prune=None), "beam_prune is None"),
        # float() of it raised a bare OverflowError.
        (lambda: tarn.Recognizer(model, beam=8, beam_prune=10**400), "beam_prune is 1000.*, beyond a float's range"),
        (lambda: tarn.WarpEstimator(model, [1.0, None]), r"candidates\[1\] is None"),
        (lambda: tarn.WarpEstimator(model, "1.0"), "list of candidate warps"),
        (lambda: tarn.Model(None), "path is a NoneType"),
    ]:
        with pytest.raises(tarn.InvalidArgumentError, match=message):
            call()


def test_lists_of_integers_are_frames(frame_model):
    """A list takes the dtype (the comment at _array): [0] * frame_size is a
    frame of zeros, as np.zeros(frame_size, np.float32) is."""
    n = frame_model.frame_size
    ints = [[(3 * i + t) % 7 - 3 for i in range(n)] for t in range(5)]
    floats = np.array(ints, dtype=np.float32)
    assert np.array_equal(frame_model.session().step_frame([0] * n), frame_model.session().step_frame(np.zeros(n, np.float32)))
    assert np.array_equal(frame_model.session().prefill(ints, outputs=True), frame_model.session().prefill(floats, outputs=True))
    with pytest.raises(tarn.InvalidArgumentError, match="expected float32 values, got bool"):
        frame_model.session().step_frame([True] * n)


def test_convert_takes_a_loaded_models_config(tmp_path):
    """tarn.convert(state_dict, out, config=Model.config): the file written
    again from a loaded model's config (its `causal`, its labels) is the
    file written from the dict it was converted with, byte for byte."""
    from converter.reference import ModelConfig
    from tests.goldens import build_model

    common = dict(d_model=16, num_layers=1, num_heads=2, d_key=8, d_value=8, d_ff=32, vocab_size=10, output_dim=4)
    for attention in ("causal", "bidirectional"):
        config = dict(common, attention=attention)
        state_dict = build_model(ModelConfig(**config), 0).state_dict()
        first, again = tmp_path / f"{attention}.tarn", tmp_path / f"{attention}-again.tarn"
        tarn.convert(state_dict, first, config=config, labels=["<blank>", "a", "b", "c"])
        loaded = tarn.Model(first).config
        assert loaded.labels == ("<blank>", "a", "b", "c")
        tarn.convert(state_dict, again, config=loaded)
        assert again.read_bytes() == first.read_bytes(), attention
        # Labels given win over the config's.
        tarn.convert(state_dict, again, config=loaded, labels=["<blank>", "x", "y", "z"])
        assert tarn.Model(again).config.labels == ("<blank>", "x", "y", "z")


def test_the_binding_refuses_a_frame_count_the_array_does_not_hold(frame_model):
    """tarn._tarn takes the frame count apart from the array (the package
    passes len(frames)): a count the array does not hold is refused before
    the runtime reads past its end."""
    n = frame_model.frame_size
    session = frame_model.session()
    frames = np.zeros((2, n), np.float32)
    for call in (lambda count: session._native.prefill_frames(frames, count, None),
                 lambda count: session._native.encode_frames(frames, count, np.zeros((100, 10), np.float32))):
        for count in (1000, 1, 2**63):
            with pytest.raises(tarn.InvalidArgumentError,
                               match=rf"frames: the array holds {2 * n} floats, not frame_count {count} x frame_size {n}"):
                call(count)
    assert session.position == 0


def test_arguments_of_the_wrong_kind_are_tarn_errors_naming_them(token_model):
    model = tarn.Model(SPEECH_MODEL)
    batch = tarn.SessionBatch(token_model)
    for call, message in [
        (lambda: tarn.WarpEstimator(model, 1.0), "WarpEstimator: candidates is a float, not a list of candidate warps"),
        (lambda: tarn.Recognizer(model, words=5), "words is a int, not a list of words"),
        (lambda: tarn.Recognizer(model, hotwords=5), "hotwords is a int, not a list of phrases"),
        (lambda: tarn.estimate_warp(model, 5), "estimate_warp: utterances is a int, not a list of files or arrays"),
        (lambda: batch.step_tokens(5, [1]), "step_tokens: sessions is a int, not a list of tarn.Session"),
        (lambda: batch.step_tokens("ab", [1]), "step_tokens: sessions: give a list of tarn.Session, not one string"),
        (lambda: tarn.read_wav(None), "read_wav: the path is a NoneType, not a str, bytes or os.PathLike"),
        (lambda: tarn.decode_wav(None), "decode_wav: data is a NoneType, not the file's bytes"),
        (lambda: tarn.decode_wav(str(SAMPLES[0])), r"decode_wav: data is a str: give the file's bytes \(read_wav takes a path\)"),
        (lambda: tarn.Recognizer(model).accept(b"\0\0"), "accept: samples are an array or a list of numbers, not a bytes"),
    ]:
        with pytest.raises(tarn.InvalidArgumentError, match=message):
            call()


def test_integer_options_beyond_their_cpp_type_are_named(token_model):
    """An option past the largest value of the C++ type it crosses as is
    refused by name (nanobind's message named no argument)."""
    model = tarn.Model(SPEECH_MODEL)
    for call, message in [
        (lambda: tarn.Recognizer(model, beam=2**33), "Recognizer: beam is 8589934592; it must be at most 4294967295"),
        (lambda: tarn.Recognizer(model, endpoint_ms=2**32), "endpoint_ms is 4294967296; it must be at most 4294967295"),
        (lambda: tarn.Recognizer(model, threads=2**31), "threads is 2147483648; it must be at most 2147483647"),
        (lambda: tarn.transcribe(model, np.zeros(10, np.float32), final_silence_ms=2**32), "final_silence_ms is 4294967296"),
        (lambda: token_model.session(num_threads=2**31), "Session: num_threads is 2147483648; it must be at most 2147483647"),
        (lambda: token_model.session(max_prefill_chunk=2**32), "max_prefill_chunk is 4294967296; it must be at most"),
        (lambda: token_model.session_bytes(2**32), "session_bytes: max_prefill_chunk is 4294967296"),
        (lambda: token_model.session_bytes(-1), "session_bytes: max_prefill_chunk is -1; it must be an int >= 0"),
        (lambda: tarn.SessionBatch(token_model, max_streams=2**32), "SessionBatch: max_streams is 4294967296"),
        (lambda: tarn.SessionBatch(token_model, num_threads=2**31), "SessionBatch: num_threads is 2147483648"),
    ]:
        with pytest.raises(tarn.InvalidArgumentError, match=message):
            call()
    session = token_model.session()
    layers = token_model.config.num_layers
    for layer in (-1, layers, 2**32):
        with pytest.raises(tarn.InvalidArgumentError,
                           match=f"attention_state: layer {layer} is out of range: the model has layers 0 to {layers - 1}"):
            session.attention_state(layer)
    for layer in (1.5, True, "0"):
        with pytest.raises(tarn.InvalidArgumentError, match=f"attention_state: layer is {layer!r}; it must be an int"):
            session.attention_state(layer)
    assert [a.shape for a in session.attention_state(np.int64(layers - 1))] == [a.shape for a in session.attention_state(0)]


def test_a_copy_of_a_session_is_a_clone_and_pickling_is_refused(token_model):
    import copy
    import pickle

    session = token_model.session()
    session.step_token(3)
    for copied in (copy.copy(session), copy.deepcopy(session), copy.deepcopy([session])[0]):
        assert copied is not session and copied.position == 1
        copied.step_token(4)
        assert session.position == 1  # the copy steps alone
        assert copied.snapshot() != session.snapshot()
    with pytest.raises(tarn.InvalidArgumentError, match=r"a tarn.Session cannot be pickled: .* session.snapshot\(\)"):
        pickle.dumps(session)
    assert copy.copy(token_model) is token_model and copy.deepcopy(token_model) is token_model
    model = tarn.Model(SPEECH_MODEL)
    for thing, name in ((token_model, "Model"), (tarn.SessionBatch(token_model), "SessionBatch"),
                        (tarn.Recognizer(model), "Recognizer"), (tarn.WarpEstimator(model), "WarpEstimator")):
        with pytest.raises(tarn.InvalidArgumentError, match=f"a tarn.{name} cannot be pickled"):
            pickle.dumps(thing)
        if name != "Model":  # a copy would share its native state
            with pytest.raises(tarn.InvalidArgumentError, match=f"a tarn.{name} cannot be pickled or copied"):
                copy.copy(thing)


def test_bytes_paths_are_paths(tmp_path):
    model = tarn.Model(SPEECH_MODEL)
    path = SAMPLES[0]
    assert tarn.transcribe(model, os.fsencode(path)) == tarn.transcribe(model, str(path))
    assert np.array_equal(tarn.read_wav(os.fsencode(path)), tarn.read_wav(path))
    assert tarn.estimate_warp(model, [os.fsencode(path)]) == tarn.estimate_warp(model, [path])
    # A name that is not UTF-8 is named as os.fsdecode() gives it.
    odd = tmp_path / os.fsdecode(b"cut-\xff.wav")
    odd.write_bytes(path.read_bytes()[:100])
    with pytest.raises(tarn.InvalidArgumentError, match="truncated") as e:
        tarn.read_wav(os.fsencode(odd))
    assert str(e.value).startswith(str(odd) + ": ")
    # A WAV file's bytes where a path goes: a tarn error saying so, not
    # open()'s ValueError (a NUL in the "path").
    wav = path.read_bytes()
    with pytest.raises(tarn.InvalidArgumentError, match="decode_wav"):
        tarn.transcribe(model, wav)
    with pytest.raises(tarn.IoError, match="cannot read it as audio"):
        tarn.read_wav(b"no\0such.wav")
